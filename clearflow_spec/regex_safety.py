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
- a back-reference (`\\1`, `\\k<name>`): matching those is exponential in general;
- polynomial backtracking: repeated parts one after the other that can share the text between them, each split
  of a failing value tried: two with nothing required between them (`a*a*`, `\\w+\\s*\\w+`), or three or more
  chained through characters they all can match (`.*a.*a.*`); k of them take time of the order of the value's
  length to the power k (`a*a*a*a*a*a*b`: 38 s on 75 characters in Java 17).
Escapes are read as the characters they stand for (`\\x61`, `\\x{61}`, `\\u0061`, `\\0141`, `\\cA`, `\\N{...}`),
so an escaped form is judged as what Java matches. This is a conservative check in Python: Spark's regex functions
run Java's engine (an engine that cannot backtrack, RE2 or re2j, would replace them in the JVM), and the ReDoS
checkers on PyPI read Python's or JavaScript's syntax, not Java's.
A possessive quantifier (`a++`, `(a+)++`) or an atomic group (`(?>...)`) gives nothing back, so it is allowed.
"""

from __future__ import annotations

import unicodedata
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
_WIDE_RANGE = 100  # a{1,5}a{1,5} tries at most 25 splits; a{1,1000}a{1,1000} a million: that one counts as a loop
_LONGEST_CHAIN = 2  # `.*foo.*` (two parts through "foo") is quadratic at most; three are refused


class PatternError(ValueError):
    """A construct refused (or a pattern that cannot be read); the message says which, in plain words."""


def _code(digits: str, base: int) -> int | None:
    try:
        code = int(digits, base)
    except ValueError:
        return None
    return code if 0 <= code <= _MAX_CODE_POINT else None


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

    def alphabet(self) -> tuple[tuple[int, int], ...]:
        """Every character a match of this node can hold."""
        if self.kind == "chars":
            return self.chars
        return tuple(r for item in self.items for r in item.alphabet())

    @property
    def loops(self) -> bool:
        """Repeats a number of times the input chooses (unbounded, or a wide range) and gives back."""
        wide = self.maximum is None or self.maximum - self.minimum >= _WIDE_RANGE
        return self.gives_back and wide and bool(self.alphabet())


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
        if char in ("R", "X"):
            return _Node("chars", chars=_ANY)  # a line break or a grapheme: several characters, any of many
        code = self.escaped_code(char)
        return _Node("chars", chars=_ANY) if code is None else self.literal(code)

    def escaped_code(self, char: str) -> int | None:
        """The code point an escape (already past `\\` and `char`) stands for, read as Java does: `\\x61`,
        `\\x{61}`, `\\u0061`, `\\0141`, `\\cA`, `\\N{LATIN SMALL LETTER A}`, `\\t`...; None when unknown (any)."""
        if char == "x":
            if self.peek() == "{":
                end = self.text.find("}", self.pos)
                digits = self.text[self.pos + 1 : end] if end > 0 else ""
                self.pos = end + 1 if end > 0 else len(self.text)
            else:
                digits = self.text[self.pos : self.pos + 2]
                self.pos += len(digits)
            return _code(digits, 16)
        if char == "u":
            digits = self.text[self.pos : self.pos + 4]
            self.pos += len(digits)
            return _code(digits, 16)
        if char == "0":
            digits = ""
            while len(digits) < 3 and self.peek() in "01234567" and self.peek():
                if len(digits) == 2 and digits[0] > "3":
                    break  # \0ooo takes a third digit only below 0400
                digits += self.take()
            return _code(digits, 8)
        if char == "c":
            control = self.take()
            return ord(control) ^ 64 if control else None
        if char == "N":
            end = self.text.find("}", self.pos)
            name = self.text[self.pos + 1 : end] if self.peek() == "{" and end > 0 else ""
            self.pos = end + 1 if name else self.pos
            try:
                return ord(unicodedata.lookup(name)) if name else None
            except KeyError:
                return None
        if char in _LITERAL_ESCAPES:
            return _LITERAL_ESCAPES[char]
        return ord(char)

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
                if node is not None and len(node.chars) == 1 and self.peek() == "-" and self.peek(1) not in ("]", ""):
                    char = chr(node.chars[0][0])  # an escaped code starts a range: [\\x61-\\x7a]
                else:
                    ranges += node.first() if node is not None else ()
                    continue
            low = ord(char)
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.take()
                high_char = self.take()
                high = self.escaped_code(self.take()) if high_char == "\\" else ord(high_char)
                ranges.append((low, _MAX_CODE_POINT if high is None else max(low, high)))
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


def _flat(node: _Node) -> list[_Node]:
    """The items of a sequence, groups that occur exactly once (and give back) opened into their own items."""
    out: list[_Node] = []
    for item in node.items:
        if item.kind == "seq" and item.minimum == item.maximum == 1 and item.gives_back:
            out += _flat(item)
        else:
            out.append(item)
    return out


def _chain_problem(node: _Node, shown: str) -> str | None:
    """Repeated parts one after the other that can share the text between them: each split of a failing text is
    tried, so k such parts take time of the order of its length to the power k (polynomial backtracking:
    `a*a*a*a*a*a*b` took 38 s on 75 characters). Refused: two with nothing required between them (`a*a*`,
    `\\w+\\s*\\w+`), or three or more chained through characters they all can match (`.*a.*a.*`)."""
    if not node.gives_back:
        return None
    if node.kind == "seq":
        items = _flat(node)
        chain: dict[int, int] = {}  # index of a loop -> the longest chain ending there
        for j, later in enumerate(items):
            if not later.loops:
                continue
            chain[j] = 1
            for i in chain:
                if i >= j:
                    break
                shared = _intersection(items[i].alphabet(), later.alphabet())
                if not shared:
                    continue
                between = items[i + 1 : j]
                if all(item.nullable() for item in between):
                    return (
                        f"the pattern {shown} has two repeated parts in a row that can match the same text (like "
                        "'a*a*' or '\\w+\\s*\\w+'): Java's regex engine can take time of the order of the "
                        "value's length to the power of their number. Merge them into one, or make one possessive "
                        "('a*+')"
                    )
                if all(item.nullable() or _overlap(item.alphabet(), shared) for item in between):
                    chain[j] = max(chain[j], chain[i] + 1)
            if chain[j] >= _LONGEST_CHAIN + 1:
                return (
                    f"the pattern {shown} has {chain[j]} repeated parts that can match the same text (like "
                    "'.*a.*a.*'): Java's regex engine can take time of the order of the value's length to the "
                    f"power {chain[j]}. Keep at most {_LONGEST_CHAIN} (rlike finds a match anywhere: a leading or "
                    "trailing '.*' is not needed), or make them possessive ('.*+')"
                )
        for item in items:
            if problem := _chain_problem(item, shown):
                return problem
        return None
    for item in node.items:
        if problem := _chain_problem(item, shown):
            return problem
    return None


def _intersection(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    return tuple((max(lo1, lo2), min(hi1, hi2)) for lo1, hi1 in a for lo2, hi2 in b if lo1 <= hi2 and lo2 <= hi1)


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
    return _problem(tree, False, shown) or _chain_problem(tree, shown)


__all__ = ["regex_problem"]
