"""User expressions (filters, computed fields): one Spark SQL expression, held to an allow-list.

A filter or transform runs inside the job's JVM, so it may only use scalar built-ins that cannot reach the JVM
(`reflect`, `java_method`), the filesystem, the network or other tables (subqueries, table-valued functions,
UDFs, `range`). Sizes are bounded: the text's length, its nesting, and the counts of functions that build
large values (`repeat`, `array_repeat`, `space`, `lpad`, `rpad`) must be literals up to `MAX_REPEAT_COUNT`.

No Spark and no Django here: `spark_jobs.spec` calls `expression_error` while parsing a spec, so the web app,
the API, the wizard and the job (which parses its spec file before its query starts) all apply the same check.
"""

from __future__ import annotations

from typing import Any

MAX_EXPRESSION_LENGTH = 10_000
MAX_NESTING = 64  # parentheses and brackets, counted before parsing (the parser recurses per level)
MAX_TREE_DEPTH = 512  # operators chained without parentheses (a OR b OR ...) nest in the parsed tree
MAX_REPEAT_COUNT = 10_000

# Scalar built-ins of Spark SQL 4 that compute a value from their arguments only. Deliberately absent:
# reflect/java_method/try_reflect (JVM calls), xpath*/from_xml (XML parsers), from_avro/from_protobuf
# (descriptor files), range/explode/inline/stack/json_tuple (generators), aggregates and window functions,
# raise_error/assert_true (stop the job), format_string/printf (unbounded widths), sequence/randstr (unbounded
# sizes), current_user/session_user/current_database/version (facts about the server).
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
    round rpad rtrim schema_of_json sec second sentences sha sha1 sha2 shiftleft shiftright shiftrightunsigned
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
                    f"nested too deeply at {_position(text, token.start)}: at most {MAX_NESTING} levels of brackets"
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
                    f"function '{token.text}' at {where}: its count must be a whole number up to {MAX_REPEAT_COUNT}"
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
            raise ValueError(f"nested too deeply: at most {MAX_TREE_DEPTH} operators may be chained")
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
        raise ValueError(f"expression is too long: {len(expression):,} characters, at most {MAX_EXPRESSION_LENGTH:,}")
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
        raise ValueError(f"nested too deeply: at most {MAX_TREE_DEPTH} operators may be chained") from None
    trees = [tree for tree in trees if tree is not None]
    if len(trees) != 1:
        raise ValueError("must be a single expression (no ';')")
    tree = trees[0]
    if isinstance(tree, exp.Query | exp.DDL | exp.DML | exp.Command | exp.Use | exp.Set):
        raise ValueError("must be an expression, not a SQL statement")
    if isinstance(tree, exp.Alias):
        raise ValueError("unexpected alias (AS ...); give the name in the transform's 'name' instead")
    _check_tree(tree)
    return tree


def expression_error(expression: str, known_fields: list[str] | None = None) -> str | None:
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
        known = {name.lower() for name in known_fields}
        for column in tree.find_all(exp.Column):
            parts = [part.name for part in column.parts]
            if not all(parts):
                continue
            path = ".".join(parts).lower()
            if path in known or any(k.startswith(path + ".") for k in known):
                continue
            # `json_field.x` style access into a known leaf is left to Spark's analyzer.
            if any(path.startswith(k + ".") for k in known):
                continue
            return f"unknown field '{'.'.join(parts)}'; known: {', '.join(sorted(known_fields)) or 'none'}"
    return None
