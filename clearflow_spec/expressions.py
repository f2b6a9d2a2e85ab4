"""User expressions (filters, computed fields): one Spark SQL expression, held to an allow-list.

A filter or transform runs inside the job's JVM, so it may only use scalar built-ins that cannot reach the JVM
(`reflect`, `java_method`), the filesystem, the network or other tables (subqueries, table-valued functions,
UDFs, `range`). Sizes are bounded (caps in `clearflow_spec.limits`): the text's length, its nesting, the counts of
functions that build large values (`repeat`, `array_repeat`, `space`, `lpad`, `rpad`) must be literals, and the
size of every value the expression builds has a static bound (`clearflow_spec.expression_bounds`, which also
refuses regex patterns that backtrack catastrophically).

No Spark and no Django here: `clearflow_spec.spec` calls `expression_error` while parsing a spec, so the web app,
the API, the wizard and the job (which parses its spec file before its query starts) all apply the same check.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clearflow_spec.expression_bounds import check_bounds
from clearflow_spec.limits import EXPRESSION_DEPTH, EXPRESSION_GROWTH, EXPRESSION_LENGTH, EXPRESSION_NESTING

MAX_EXPRESSION_LENGTH = EXPRESSION_LENGTH.maximum
MAX_NESTING = EXPRESSION_NESTING.maximum  # parentheses and brackets, counted before parsing (the parser recurses)
MAX_TREE_DEPTH = EXPRESSION_DEPTH.maximum  # operators chained without parentheses (a OR b OR ...) nest in the tree
MAX_REPEAT_COUNT = EXPRESSION_GROWTH.maximum

# Scalar built-ins of Spark SQL 4 that compute a value from their arguments only. Deliberately absent:
# reflect/java_method/try_reflect (JVM calls), xpath*/from_xml (XML parsers), from_avro/from_protobuf
# (descriptor files), range/explode/inline/stack/json_tuple (generators), aggregates and window functions,
# raise_error/assert_true (stop the job), format_string/printf (unbounded widths), randstr (unbounded size),
# current_user/session_user/current_database/version (facts about the server). `sequence` is allowed with
# literal bounds only (expression_bounds).
ALLOWED_FUNCTIONS: frozenset[str] = frozenset(
    """
    abs acos acosh add_months aes_decrypt aes_encrypt and array array_append array_compact array_contains
    array_distinct array_except array_insert array_intersect array_join array_max array_min array_position
    array_prepend array_remove array_repeat array_size array_sort array_union arrays_overlap arrays_zip ascii asin
    asinh atan atan2 atanh base64 between bigint bin binary bit_count bit_get bit_length boolean bround btrim
    cardinality case cast cbrt ceil ceiling char char_length character_length chr coalesce concat concat_ws
    contains conv convert_timezone cos cosh cot crc32 csc date date_add date_diff date_format date_from_unix_date
    date_part date_sub date_trunc dateadd datediff datepart day dayname dayofmonth dayofweek dayofyear dec decimal
    decode degrees div double e element_at elt encode endswith equal_null exists exp expm1 extract factorial
    filter find_in_set float floor forall format_number from_csv from_json from_unixtime from_utc_timestamp
    get get_json_object getbit greatest hash hex hour hypot if ifnull ilike in initcap instr int is_valid_utf8
    is_variant_null isnan isnotnull isnull json_array_length json_object_keys last_day lcase least left len length
    levenshtein like ln locate log log10 log1p log2 lower lpad ltrim luhn_check make_date make_dt_interval
    make_interval make_timestamp make_timestamp_ltz make_timestamp_ntz make_valid_utf8 make_ym_interval map
    map_concat map_contains_key map_entries map_filter map_from_arrays map_from_entries map_keys map_values
    map_zip_with mask md5 minute mod monotonically_increasing_id month monthname months_between named_struct nanvl
    negative next_day not now nullif nullifzero numeric nvl nvl2 octet_length or overlay parse_json parse_url pi
    pmod position positive pow power quarter radians rand randn random regexp regexp_count regexp_extract
    regexp_extract_all regexp_instr regexp_like regexp_replace regexp_substr repeat replace reverse right rint rlike
    round rpad rtrim schema_of_json sec second sentences sequence sha sha1 sha2 shiftleft shiftright shiftrightunsigned
    shuffle sign signum sin sinh size slice smallint sort_array soundex space split split_part sqrt startswith
    str_to_map string struct substr substring substring_index tan tanh timestamp timestamp_micros timestamp_millis
    timestamp_seconds tinyint to_binary to_char to_csv to_date to_json to_number to_timestamp to_timestamp_ltz
    to_timestamp_ntz to_unix_timestamp to_utc_timestamp to_varchar to_variant_object transform transform_keys
    transform_values translate trim trunc try_add try_divide try_element_at try_mod try_multiply try_parse_json
    try_parse_url try_subtract try_to_binary try_to_number try_to_timestamp try_validate_utf8 try_variant_get
    typeof ucase unbase64 unhex unix_date unix_micros unix_millis unix_seconds unix_timestamp upper url_decode
    url_encode uuid validate_utf8 variant_get weekday weekofyear when xxhash64 year zeroifnull zip_with
    aggregate reduce
    """.split()  # noqa: SIM905 - a list of ~300 names reads better as words
)
# Keywords that may precede "(" without being a function call (CAST(... AS DECIMAL(10, 2)), a IN (1, 2), ...).
_SYNTAX_WORDS = (
    "all and any as between case char character dec decimal else escape for from in is like ilike not numeric "
    "or rlike similar some then try_cast varchar when with"
)
_SYNTAX_BEFORE_PAREN = frozenset(_SYNTAX_WORDS.split())
# Functions whose size argument (0-based position) must be a literal up to MAX_REPEAT_COUNT.
_BOUNDED_ARGUMENT = {"repeat": 1, "array_repeat": 1, "space": 0, "lpad": 1, "rpad": 1}


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


def _call_arguments(tokens: list[Any], open_index: int) -> list[list[Any]]:
    """The top-level arguments (token lists) of the call whose "(" is at `open_index`."""
    from sqlglot.tokens import TokenType

    arguments: list[list[Any]] = [[]]
    depth = 0
    for token in tokens[open_index + 1 :]:
        if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
        elif token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET):
            if depth == 0:
                break
            depth -= 1
        elif token.token_type == TokenType.COMMA and depth == 0:
            arguments.append([])
            continue
        arguments[-1].append(token)
    return arguments


def _check_tokens(text: str, tokens: list[Any]) -> None:
    """Nesting, then every name called as a function: allowed, unqualified, and bounded where it must be."""
    from sqlglot.tokens import TokenType

    depth = 0
    for token in tokens:
        if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
            if depth > MAX_NESTING:
                raise ValueError(
                    f"nested too deeply at {_position(text, token.start)}: at most {MAX_NESTING} levels of brackets "
                    f"(cap: {EXPRESSION_NESTING.name})"
                )
        elif token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET):
            depth -= 1
    for index, token in enumerate(tokens[:-1]):
        if tokens[index + 1].token_type != TokenType.L_PAREN:
            continue
        name = token.text.lower()
        if not name or not (name[0].isalpha() or name[0] == "_"):
            continue  # an operator or a literal before "(", e.g. "1 + (2)"
        where = _position(text, token.start)
        if index > 0 and tokens[index - 1].token_type == TokenType.DOT:
            raise ValueError(f"function '{token.text}' at {where}: qualified function names are not allowed")
        if name in _SYNTAX_BEFORE_PAREN and token.token_type != TokenType.IDENTIFIER:
            continue
        if name not in ALLOWED_FUNCTIONS:
            raise ValueError(f"function '{token.text}' at {where} is not allowed (not a permitted scalar function)")
        if name in _BOUNDED_ARGUMENT:
            arguments = _call_arguments(tokens, index + 1)
            position = _BOUNDED_ARGUMENT[name]
            argument = arguments[position] if position < len(arguments) else []
            if (
                len(argument) != 1
                or argument[0].token_type != TokenType.NUMBER
                or not argument[0].text.isdigit()
                or int(argument[0].text) > MAX_REPEAT_COUNT
            ):
                raise ValueError(
                    f"function '{token.text}' at {where}: its count must be a whole number up to {MAX_REPEAT_COUNT} "
                    f"(cap: {EXPRESSION_GROWTH.name})"
                )


def _check_tree(tree: Any) -> None:
    """No queries, tables or server facts anywhere in the parsed expression, and a bounded depth."""
    from sqlglot import exp

    forbidden = (exp.Query, exp.Subquery, exp.Table, exp.Lateral, exp.Window, exp.Placeholder, exp.Parameter)
    server_facts = (exp.CurrentUser, exp.CurrentSchema, exp.CurrentCatalog)
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            raise ValueError(
                f"nested too deeply: at most {MAX_TREE_DEPTH} operators may be chained (cap: {EXPRESSION_DEPTH.name})"
            )
        if isinstance(node, forbidden) or (isinstance(node, exp.Exists) and isinstance(node.this, exp.Query)):
            raise ValueError("subqueries, tables and window functions are not allowed in an expression")
        if isinstance(node, server_facts):
            raise ValueError(f"'{node.sql(dialect='spark')}' is not allowed in an expression")
        stack.extend((child, depth + 1) for child in node.iter_expressions())


def expression_tree(expression: str) -> Any:
    """Parse one Spark SQL expression held to the allow-list; raise ValueError naming the problem and its place."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.dialects.spark import Spark
    from sqlglot.errors import ParseError, TokenError

    if not isinstance(expression, str) or not expression.strip():
        raise ValueError("empty expression")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ValueError(EXPRESSION_LENGTH.refusal(len(expression)))
    try:
        tokens = Spark().tokenize(expression)
    except TokenError as exc:
        raise ValueError(f"syntax error: {exc}") from None
    _check_tokens(expression, tokens)
    try:
        trees = sqlglot.parse(expression, read="spark")
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        description = str(first.get("description", exc)).split("\n")[0]
        near = first.get("highlight") or ""
        where = f"line {first.get('line', '?')}, column {first.get('col', '?')}"
        near_text = f" near {near!r}" if near else ""
        raise ValueError(f"syntax error at {where}{near_text}: {description}") from None
    except TokenError as exc:
        raise ValueError(f"syntax error: {exc}") from None
    except RecursionError:
        # Bracket nesting is bounded above; this is operators nested without brackets (NOT NOT ..., CASE WHEN CASE).
        raise ValueError(
            f"nested too deeply: at most {MAX_TREE_DEPTH} operators may be chained (cap: {EXPRESSION_DEPTH.name})"
        ) from None
    trees = [tree for tree in trees if tree is not None]
    if len(trees) != 1:
        raise ValueError("must be a single expression (no ';')")
    tree = trees[0]
    if isinstance(tree, exp.Query | exp.DDL | exp.DML | exp.Command | exp.Use | exp.Set):
        raise ValueError("must be an expression, not a SQL statement")
    if isinstance(tree, exp.Alias):
        raise ValueError("unexpected alias (AS ...); give the name in the transform's 'name' instead")
    _check_tree(tree)
    check_bounds(tree)
    return tree


class KnownNames:
    """The names an expression may refer to (dotted field paths, Kafka metadata, computed fields), each lookup
    in constant time: no list of every field is searched per column reference."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names: list[str] = []
        self._exact: set[str] = set()
        self._parents: set[str] = set()
        for name in names:
            self.add(name)

    def add(self, name: str) -> None:
        self.names.append(name)
        lowered = name.lower()
        self._exact.add(lowered)
        self._parents.update(lowered[:i] for i, char in enumerate(lowered) if char == ".")

    def knows(self, path: str) -> bool:
        """`user.id` is known when `user.id` is, or `user.id.x` (a parent), or `user` (access into a json leaf is
        left to Spark's analyzer)."""
        lowered = path.lower()
        if lowered in self._exact or lowered in self._parents:
            return True
        return any(lowered[:i] in self._exact for i, char in enumerate(lowered) if char == ".")

    def closest(self, name: str) -> str | None:
        """The known name a typo most likely meant (`agee` -> `age`), None when none is close."""
        import difflib

        by_lower = {known.lower(): known for known in self.names}
        found = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.75)
        return by_lower[found[0]] if found else None

    def listed(self, at_most: int = 20) -> str:
        shown = ", ".join(sorted(self.names)[:at_most]) or "none"
        return shown if len(self.names) <= at_most else f"{shown} and {len(self.names) - at_most:,} more"


def expression_error(expression: str, known_fields: Iterable[str] | KnownNames | None = None) -> str | None:
    """None when `expression` is one allowed Spark SQL expression, else a message with its position.

    With `known_fields` (dotted paths and names), column references are also checked: `user.id` is fine when
    `user.id` (or `user.id.x`) is known. The job re-checks fully with Spark's analyzer before it starts.
    """
    from sqlglot import exp

    try:
        tree = expression_tree(expression)
    except ValueError as exc:
        return str(exc)
    if known_fields is not None:
        known = known_fields if isinstance(known_fields, KnownNames) else KnownNames(known_fields)
        lambda_names = {param.name.lower() for node in tree.find_all(exp.Lambda) for param in node.expressions}
        for column in tree.find_all(exp.Column):
            parts = [part.name for part in column.parts]
            if not all(parts) or parts[0].lower() in lambda_names:
                continue
            if not known.knows(".".join(parts)):
                name = ".".join(parts)
                guess = known.closest(name)
                hint = f" (did you mean `{guess}`?)" if guess else ""
                return f"unknown field '{name}'{hint}; known: {known.listed()}"
    return None
