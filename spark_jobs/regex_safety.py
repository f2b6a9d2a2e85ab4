"""Regular expressions that cannot backtrack catastrophically, checked before a job evaluates them per row.

Spark runs `rlike`, `regexp_extract`, `split`... with Java's backtracking regex engine. A pattern with a
repetition inside a repetition (`(a+)+`) or a repeated choice whose branches can match the same text (`(a|a)*`)
takes time exponential in the length of a value that almost matches: one event can hold an executor for hours.
`regex_problem` reads a pattern in Java's syntax and names such a construct in plain words.

The rules (a pattern is refused when one holds):
- a repeated part (`*`, `+`, `{n,}`, `{n,m}` with m > 1) contains a part repeated a variable number of times
  (`(a+)+`, `(a*b?)*`, `(x{1,3})+`);
- a repeated choice has two branches that can start with the same character, or one that can match nothing
  (`(a|ab)*`, `(\\w|\\d)+`, `(a|)+`);
- a back-reference (`\\1`, `\\k<name>`): matching those is exponential in general.
A possessive quantifier (`a++`, `(a+)++`) or an atomic group (`(?>...)`) gives nothing back, so it is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_MAX_CODE_POINT = 0x10FFFF
_ANY = ((0, _MAX_CODE_POINT),)
_CLASS_ESCAPES = {
    "d": ((48, 57),),
    "w": ((48, 57), (65, 90), (95, 95), (97, 122)),
    "s": ((9, 13), (32, 32)),
    "h": ((9, 9), (32, 32), (0xA0, 0xA0)),
    "v": ((10, 13),),
}
_LITERAL_ESCAPES = {"t": 9, "n": 10, "r": 13, "f": 12, "a": 7, "e": 27}
_ANCHOR_ESCAPES = set("bBAGZz")


class PatternError(ValueError):
    """A construct refused (or a pattern that cannot be read); the message says which, in plain words."""


def _overlap(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> bool:
    return any(lo1 <= hi2 and lo2 <= hi1 for lo1, hi1 in a for lo2, hi2 in b)


@dataclass
class _Node:
    """One part of a pattern: a sequence (`items`), a choice (`branches`), or a single character set (`chars`)."""

    kind: str  # "seq" | "alt" | "chars" | "empty"
    items: list[_Node] = field(default_factory=list)
    chars: tuple[tuple[int, int], ...] = ()
    minimum: int = 1  # how often the node repeats (a quantifier's bounds); maximum None: unbounded
    maximum: int | None = 1
    gives_back: bool = True  # False for possessive quantifiers and atomic groups

    @property
    def repeats(self) -> bool:
        return self.maximum is None or self.maximum > 1

    @property
    def varies(self) -> bool:
        return self.gives_back and self.minimum != self.maximum

    def nullable(self) -> bool:
        if self.minimum == 0 or self.kind == "empty":
            return True
        if self.kind == "seq":
            return all(item.nullable() for item in self.items)
        if self.kind == "alt":
            return any(item.nullable() for item in self.items)
        return False

    def first(self) -> tuple[tuple[int, int], ...]:
        """Characters a match of this node can start with."""
        if self.kind == "chars":
            return self.chars
        if self.kind == "alt":
            return tuple(r for item in self.items for r in item.first())
        out: list[tuple[int, int]] = []
        for item in self.items:
            out += item.first()
            if not item.nullable():
                break
        return tuple(out)


class _Reader:
    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.pos = 0
        self.ignore_case = False

    def peek(self, ahead: int = 0) -> str:
        index = self.pos + ahead
        return self.text[index] if index < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        self.pos += 1
        return char

    # alternation := sequence ('|' sequence)*
    def alternation(self) -> _Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.take()
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else _Node("alt", items=branches)

    def sequence(self) -> _Node:
        items: list[_Node] = []
        while self.peek() not in ("", "|", ")"):
            atom = self.atom()
            if atom is not None:
                items.append(self.quantified(atom))
        return _Node("seq", items=items) if items else _Node("empty")

    def quantified(self, atom: _Node) -> _Node:
        bounds = self.quantifier()
        while bounds is not None:
            minimum, maximum = bounds
            possessive = self.peek() == "+"
            if self.peek() in ("+", "?"):
                self.take()
            atom = _Node("seq", items=[atom], minimum=minimum, maximum=maximum, gives_back=not possessive)
            bounds = self.quantifier()
        return atom

    def quantifier(self) -> tuple[int, int | None] | None:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.take()
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
        if char == "{":
            end = self.text.find("}", self.pos)
            body = self.text[self.pos + 1 : end] if end > 0 else ""
            low, comma, high = body.partition(",")
            if low.isdigit() and (not high or high.isdigit()):
                self.pos = end + 1
                return int(low), (int(high) if high else (None if comma else int(low)))
        return None

    def atom(self) -> _Node | None:
        char = self.take()
        if char == "(":
            return self.group()
        if char == "[":
            return _Node("chars", chars=self.char_class())
        if char == "\\":
            return self.escape()
        if char in ("^", "$"):
            return None
        if char == ".":
            return _Node("chars", chars=_ANY)
        return self.literal(ord(char))

    def literal(self, code: int) -> _Node:
        chars = [(code, code)]
        letter = chr(code)
        if self.ignore_case and letter.lower() != letter.upper():
            chars += [(ord(c), ord(c)) for c in (letter.lower(), letter.upper()) if len(c) == 1]
        return _Node("chars", chars=tuple(chars))

    def group(self) -> _Node | None:
        atomic = False
        if self.peek() == "?":
            self.take()
            kind = self.take()
            if kind == "<" and self.peek() in ("=", "!"):
                kind += self.take()
            if kind in ("=", "!", "<=", "<!"):  # lookaround: matches no characters
                self.alternation()
                self.close()
                return None
            if kind == "<":  # named group
                while self.peek() not in ("", ">"):
                    self.take()
                self.take()
            elif kind == ">":
                atomic = True
            elif kind != ":":  # inline flags: (?i) or (?i:...)
                flags = kind
                while self.peek() not in ("", ")", ":"):
                    flags += self.take()
                if "i" in flags.split("-")[0]:
                    self.ignore_case = True
                if self.take() == ")":
                    return None
        inner = self.alternation()
        self.close()
        return _Node("seq", items=[inner], gives_back=not atomic)

    def close(self) -> None:
        if self.take() != ")":
            raise PatternError("a '(' has no matching ')'")

    def escape(self) -> _Node | None:
        char = self.take()
        if not char:
            raise PatternError("the pattern ends with a lone backslash")
        if (char.isdigit() and char != "0") or char == "k":
            raise PatternError("back-references (\\1, \\k<name>) are not allowed: they can take exponential time")
        if char in _ANCHOR_ESCAPES:
            return None
        lowered = char.lower()
        if lowered in _CLASS_ESCAPES:
            return _Node("chars", chars=_ANY if char.isupper() else _CLASS_ESCAPES[lowered])
        if char in ("p", "P"):
            if self.peek() == "{":
                self.pos = max(self.pos, self.text.find("}", self.pos) + 1)
            else:
                self.take()
            return _Node("chars", chars=_ANY)
        if char == "Q":
            end = self.text.find("\\E", self.pos)
            quoted = self.text[self.pos : end if end >= 0 else len(self.text)]
            self.pos = end + 2 if end >= 0 else len(self.text)
            return _Node("seq", items=[self.literal(ord(c)) for c in quoted]) if quoted else None
        if char in ("x", "u", "0", "c", "N", "R", "X"):
            return _Node("chars", chars=_ANY)  # a code given in digits, or a class of line breaks/graphemes
        if char in _LITERAL_ESCAPES:
            return self.literal(_LITERAL_ESCAPES[char])
        return self.literal(ord(char))

    def char_class(self) -> tuple[tuple[int, int], ...]:
        """A `[...]` set (already past `[`), nested sets and `&&` included; a negated one counts as any."""
        negated = self.peek() == "^"
        if negated:
            self.take()
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            char = self.take()
            if not char:
                raise PatternError("a '[' has no matching ']'")
            if char == "]" and not first:
                break
            first = False
            if char == "[":
                ranges += self.char_class()
                continue
            if char == "\\":
                node = self.escape()
                ranges += node.first() if node is not None else ()
                continue
            low = ord(char)
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.take()
                high_char = self.take()
                high = _LITERAL_ESCAPES.get(self.take(), 0) if high_char == "\\" else ord(high_char)
                ranges.append((low, max(low, high)))
            else:
                ranges.append((low, low))
        if negated or self.ignore_case:
            return _ANY
        return tuple(ranges)


def _problem(node: _Node, inside_repeat: bool, shown: str) -> str | None:
    """The first dangerous construct under `node`; `inside_repeat`: a repeated part that gives back encloses it."""
    if inside_repeat and node.varies:
        return (
            f"the pattern {shown} repeats a part that itself repeats (like '(a+)+'): Java's regex engine can take "
            "exponential time on it. Remove the inner or the outer repetition, or make the inner one possessive "
            "('a++')"
        )
    if inside_repeat and node.kind == "alt":
        starts = [branch.first() for branch in node.items]
        clash = any(_overlap(a, b) for i, a in enumerate(starts) for b in starts[i + 1 :])
        if clash or any(branch.nullable() for branch in node.items):
            return (
                f"the pattern {shown} repeats a choice whose branches can match the same text (like '(a|a)*'): "
                "Java's regex engine can take exponential time on it. Make the branches start differently"
            )
    if not node.gives_back:
        return None
    for item in node.items:
        problem = _problem(item, inside_repeat or node.repeats, shown)
        if problem:
            return problem
    return None


def regex_problem(pattern: str) -> str | None:
    """None for a pattern safe to run on every event, else what is wrong with it, in plain words."""
    shown = repr(pattern if len(pattern) <= 60 else pattern[:57] + "...")
    reader = _Reader(pattern)
    try:
        tree = reader.alternation()
        if reader.pos < len(pattern):
            raise PatternError("a ')' has no matching '('")
    except PatternError as exc:
        return f"the pattern {shown}: {exc}"
    return _problem(tree, False, shown)


__all__ = ["regex_problem"]
