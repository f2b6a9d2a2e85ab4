"""Expressions bounded by what they produce: a static bound on the size of every value an expression builds,
and safe regular expressions.

Each count a function takes is small on its own (`repeat(email, 10000)`), but nested they multiply:
`repeat(repeat(repeat(email, 10000), 10000), 10000)` asks for 10^12 characters per event. So every node of the
parsed expression gets an upper bound on its value's size, as `growth * N + constant`, where N is the size of
the event's largest value (unknown until the job runs). Sizes are in characters (bytes for binary values;
array and map elements count their contents plus one each). A node is refused when
- its `growth` is over `EXPRESSION_GROWTH` (it can be more than 10,000 times larger than its input);
- its `constant` is over `EXPRESSION_OUTPUT` (a value built from constants alone, like `space(10000000)`);
- its size would grow with the square of the input (`replace(email, 'a', email)`).

Most functions give at most the sum of their arguments; the ones listed in `_RULES` may give more.
Numbers, booleans, dates and timestamps have a fixed size. A lambda's variable is bounded by its array.

Patterns given to regex functions (`rlike`, `regexp_extract`, `split`...) must be string literals that
`clearflow_spec.regex_safety.regex_problem` accepts. No Spark and no Django here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from clearflow_spec.limits import EXPRESSION_GROWTH, EXPRESSION_OUTPUT
from clearflow_spec.regex_safety import regex_problem

_FIXED = 32  # a number, a date, a timestamp: at most this many characters written out


@dataclass(frozen=True)
class Size:
    """An upper bound `growth * N + constant` on a value's size, N being the size of the event's largest value."""

    growth: float
    constant: float

    def __add__(self, other: Size) -> Size:
        return Size(self.growth + other.growth, self.constant + other.constant)

    def times(self, other: Size, node: Any) -> Size:
        if self.growth and other.growth:
            raise ValueError(
                f"{_shown(node)}: its size could grow with the square of the event's values "
                f"(cap: {EXPRESSION_GROWTH.name}); use a constant for one side"
            )
        return Size(self.growth * other.constant + other.growth * self.constant, self.constant * other.constant)

    def scaled(self, factor: float) -> Size:
        return Size(self.growth * factor, self.constant * factor)


FIXED = Size(0, _FIXED)
BOOLEAN = Size(0, 5)
INPUT = Size(1, 0)
NOTHING = Size(0, 0)


def _shown(node: Any) -> str:
    text = node.sql(dialect="spark")
    return f"'{text}'" if len(text) <= 60 else f"'{text[:57]}...'"


def _union(sizes: list[Size]) -> Size:
    """A value that is one of several (if, case, coalesce): the largest of each part."""
    return Size(max((s.growth for s in sizes), default=0), max((s.constant for s in sizes), default=0))


def _count(node: Any) -> int:
    """A count given as a whole-number literal (`_check_tokens` already held it to the cap)."""
    from sqlglot import exp

    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
        return int(node.this)
    raise ValueError(f"{_shown(node)}: a count must be a whole number literal, at most {EXPRESSION_GROWTH.maximum:,}")


class _Walker:
    """Sizes of every node, bottom-up; raises ValueError on the first node over a cap or an unsafe pattern."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Size]] = []

    def size(self, node: Any) -> Size:
        result = self._size(node)
        if result.growth > EXPRESSION_GROWTH.maximum:
            raise ValueError(
                f"{_shown(node)} could be {result.growth:,.0f} times the size of the event's values, at most "
                f"{EXPRESSION_GROWTH.maximum:,} (cap: {EXPRESSION_GROWTH.name})"
            )
        if result.constant > EXPRESSION_OUTPUT.maximum:
            raise ValueError(
                f"{_shown(node)} could build a value of {result.constant:,.0f} characters, at most "
                f"{EXPRESSION_OUTPUT.maximum:,} (cap: {EXPRESSION_OUTPUT.name})"
            )
        return result

    def _size(self, node: Any) -> Size:
        from sqlglot import exp

        if isinstance(node, exp.Literal):
            return Size(0, len(str(node.this))) if node.is_string else FIXED
        if isinstance(node, exp.Column | exp.Identifier):
            return self._reference(node)
        if isinstance(node, exp.Boolean | exp.Null | exp.Predicate | exp.Connector | exp.Not):
            self._children(node)
            return BOOLEAN
        if isinstance(node, _arithmetic()):
            self._children(node)
            return FIXED
        for kind, rule in _rules().items():
            if isinstance(node, kind):
                return rule(self, node)
        name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
        if name in _NAMED_RULES:
            return _NAMED_RULES[name](self, node, node.expressions)
        if any(isinstance(child, exp.Lambda) for child in node.iter_expressions()):
            return _with_lambdas(self, node)
        return _sum(self._children(node))

    def _reference(self, node: Any) -> Size:
        from sqlglot import exp

        first = (node.parts[0].name if isinstance(node, exp.Column) else node.name).lower()
        for scope in reversed(self.scopes):
            if first in scope:
                return scope[first]
        return INPUT

    def _children(self, node: Any) -> list[Size]:
        return [self.size(child) for child in node.iter_expressions()]

    def lambda_body(self, function: Any, bindings: list[Size]) -> Size:
        names = [param.name.lower() for param in function.expressions]
        self.scopes.append(dict(zip(names, bindings, strict=False)))
        try:
            return self.size(function.this)
        finally:
            self.scopes.pop()


def _sum(sizes: list[Size]) -> Size:
    total = NOTHING
    for size in sizes:
        total = total + size
    return total + Size(0, 1)


def _arg(walker: _Walker, node: Any, name: str) -> Size:
    child = node.args.get(name)
    return walker.size(child) if child is not None else NOTHING


def _repeat(walker: _Walker, node: Any) -> Size:
    return walker.size(node.this).scaled(_count(node.args["times"]))


def _pad(walker: _Walker, node: Any) -> Size:
    walker.size(node.this)
    _arg(walker, node, "fill_pattern")
    return Size(0, _count(node.args["expression"]))  # lpad/rpad give exactly that many characters


def _space(walker: _Walker, node: Any) -> Size:
    return Size(0, _count(node.this))


def _replace(walker: _Walker, node: Any) -> Size:
    """Every match (up to one per character, and one before it) becomes the replacement."""
    this = walker.size(node.this)
    _arg(walker, node, "expression")
    replacement = _arg(walker, node, "replacement")
    for extra in ("position", "occurrence", "modifiers"):
        _arg(walker, node, extra)
    return this + this.times(replacement, node) + replacement


def _array_join(walker: _Walker, node: Any) -> Size:
    array = walker.size(node.this)
    separators = _arg(walker, node, "expression") + _arg(walker, node, "null")
    return array + array.times(separators, node)


def _concat_ws(walker: _Walker, node: Any) -> Size:
    separator, *parts = [walker.size(child) for child in node.expressions] or [NOTHING]
    joined = _sum(parts)
    return joined + joined.times(separator, node)


def _sequence(walker: _Walker, node: Any) -> Size:
    bounds = [node.args.get(name) for name in ("start", "end", "step")]
    try:
        start, end = _count_signed(bounds[0]), _count_signed(bounds[1])
        step = abs(_count_signed(bounds[2])) if bounds[2] is not None else 1
    except ValueError:
        raise ValueError(
            f"{_shown(node)}: sequence takes whole-number literals (start, stop, step), so that its length is known"
        ) from None
    length = abs(end - start) // max(step, 1) + 1
    return Size(0, length * (_FIXED + 1))


def _count_signed(node: Any) -> int:
    from sqlglot import exp

    if isinstance(node, exp.Neg):
        return -_count(node.this)
    return _count(node)


def _with_lambdas(walker: _Walker, node: Any) -> Size:
    """transform, zip_with, transform_values...: each lambda runs once per element, its variables bounded by
    the arrays (or maps) it is given."""
    from sqlglot import exp

    children = list(node.iter_expressions())
    arrays = _sum([walker.size(c) for c in children if not isinstance(c, exp.Lambda)])
    result = arrays
    for function in (c for c in children if isinstance(c, exp.Lambda)):
        arity = len(function.expressions)
        without = walker.lambda_body(function, [NOTHING] * arity)
        per_element = walker.lambda_body(function, [INPUT] * arity).growth - without.growth
        # the sum over elements of (g * |x_i| + body) is at most g * |arrays| + count * body, count <= |arrays|
        result = result + arrays.scaled(per_element) + arrays.times(without, node)
    return result


def _selects(walker: _Walker, node: Any) -> Size:
    """filter / array_sort / exists: the result is the array (or a boolean); the lambda is only checked."""
    from sqlglot import exp

    array = walker.size(node.this)
    for child in node.iter_expressions():
        if isinstance(child, exp.Lambda):
            walker.lambda_body(child, [array] * len(child.expressions))
        elif child is not node.this:
            walker.size(child)
    return BOOLEAN if isinstance(node, exp.Exists | exp.ArrayAll | exp.ArrayAny) else array


def _if(walker: _Walker, node: Any) -> Size:
    walker.size(node.this)
    return _union([_arg(walker, node, "true"), _arg(walker, node, "false")])


def _reduce(walker: _Walker, node: Any) -> Size:
    """aggregate(array, start, (acc, x) -> merge, acc -> finish): refused when the accumulator can multiply."""
    array = walker.size(node.this)
    start = _arg(walker, node, "initial")
    merge = node.args["merge"]
    base = walker.lambda_body(merge, [NOTHING, NOTHING])
    per_acc = walker.lambda_body(merge, [INPUT, NOTHING]).growth - base.growth
    per_element = walker.lambda_body(merge, [NOTHING, INPUT]).growth - base.growth
    if per_acc > 1:
        raise ValueError(
            f"{_shown(node)}: the accumulator can grow {per_acc:g} times at each element, exponentially over the "
            f"array (cap: {EXPRESSION_GROWTH.name})"
        )
    accumulated = start + array.scaled(per_element) + array.times(base, node)
    finish = node.args.get("finish")
    if finish is None:
        return accumulated
    constant = walker.lambda_body(finish, [NOTHING])
    per_accumulated = walker.lambda_body(finish, [INPUT]).growth - constant.growth
    return accumulated.scaled(per_accumulated) + constant


def _factor(factor: float) -> Callable[[_Walker, Any], Size]:
    """A function whose result can be `factor` times the size of its arguments (hex, base64, escaping...)."""

    def rule(walker: _Walker, node: Any) -> Size:
        return _sum(walker._children(node)).scaled(factor) + Size(0, 8)

    return rule


@cache
def _arithmetic() -> tuple[type, ...]:
    from sqlglot import exp

    return (
        exp.Add,
        exp.Sub,
        exp.Mul,
        exp.Div,
        exp.IntDiv,
        exp.Mod,
        exp.Pow,
        exp.Neg,
        exp.BitwiseAnd,
        exp.BitwiseOr,
        exp.BitwiseXor,
        exp.BitwiseLeftShift,
        exp.BitwiseRightShift,
        exp.BitwiseNot,
    )


@cache
def _rules() -> dict[type, Callable[[_Walker, Any], Size]]:
    from sqlglot import exp

    return {
        exp.Repeat: _repeat,
        exp.Pad: _pad,
        exp.Space: _space,
        exp.Replace: _replace,
        exp.RegexpReplace: _replace,
        exp.ArrayToString: _array_join,
        exp.ConcatWs: _concat_ws,
        exp.GenerateSeries: _sequence,
        exp.ArrayFilter: _selects,
        exp.ArraySort: _selects,
        exp.Exists: _selects,
        exp.ArrayAll: _selects,
        exp.ArrayAny: _selects,
        exp.Reduce: _reduce,
        exp.Hex: _factor(2),
        exp.ToBase64: _factor(2),
        exp.JSONFormat: _factor(6),  # to_json: a control character is written as \u0000
        exp.Upper: _factor(3),  # Unicode case mapping can give up to 3 characters for one
        exp.Lower: _factor(3),
        exp.Initcap: _factor(3),
        exp.Cast: _factor(2),  # an array or struct written out as text
        exp.TryCast: _factor(2),
        exp.If: _if,
        exp.Case: lambda w, n: _union(w._children(n)),
        exp.Coalesce: lambda w, n: _union(w._children(n)),
    }


def _array_repeat(walker: _Walker, node: Any, args: list[Any]) -> Size:
    if len(args) != 2:
        return _sum([walker.size(a) for a in args])
    return (walker.size(args[0]) + Size(0, 1)).scaled(_count(args[1]))


def _format_number(walker: _Walker, node: Any, args: list[Any]) -> Size:
    from sqlglot import exp

    sizes = [walker.size(a) for a in args]
    if len(args) == 2 and not (isinstance(args[1], exp.Literal) and args[1].is_string):
        return FIXED + Size(0, _count(args[1]))  # format_number(x, d): d decimal places
    return _sum(sizes).scaled(2) + FIXED


def _scaled_named(factor: float) -> Callable[[_Walker, Any, list[Any]], Size]:
    return lambda walker, node, args: _sum([walker.size(a) for a in args]).scaled(factor) + Size(0, 8)


# Functions sqlglot leaves anonymous (by their Spark name).
_NAMED_RULES: dict[str, Callable[[_Walker, Any, list[Any]], Size]] = {
    "array_repeat": _array_repeat,
    "format_number": _format_number,
    "url_encode": _scaled_named(9),  # a character is up to 4 UTF-8 bytes, each written %XX
    "to_csv": _scaled_named(2),
    "encode": _scaled_named(4),
}


# --- regular expressions ------------------------------------------------------------------------------------


def _regex_arguments(node: Any) -> list[tuple[str, Any]]:
    """(function name, pattern node) for each regex a node hands to Java's regex engine."""
    from sqlglot import exp

    single = (
        exp.RegexpLike,
        exp.RegexpExtract,
        exp.RegexpExtractAll,
        exp.RegexpReplace,
        exp.RegexpCount,
        exp.RegexpInstr,
        exp.RegexpSubstr,
        exp.RegexpSplit,
    )
    if isinstance(node, single):
        return [("the regex function", node.args.get("expression"))]
    if isinstance(node, exp.StrToMap):
        return [("str_to_map", node.args.get(name)) for name in ("pair_delim", "key_value_delim")]
    if isinstance(node, exp.Anonymous) and node.name.lower() == "regexp" and len(node.expressions) == 2:
        return [("regexp", node.expressions[1])]
    return []


def _check_patterns(tree: Any) -> None:
    from sqlglot import exp

    for node in tree.walk():
        for function, pattern in _regex_arguments(node):
            if pattern is None:
                continue
            if not (isinstance(pattern, exp.Literal) and pattern.is_string):
                raise ValueError(
                    f"{_shown(node)}: the pattern of {function} must be a string literal (a pattern taken from the "
                    "event could take exponential time to match)"
                )
            if problem := regex_problem(str(pattern.this)):
                raise ValueError(f"{_shown(node)}: {problem}")


def check_bounds(tree: Any) -> None:
    """Raise ValueError, in plain words, when a parsed expression could build a value over the caps or hands
    an unsafe pattern to a regex function."""
    _check_patterns(tree)
    _Walker().size(tree)


__all__ = ["Size", "check_bounds"]
