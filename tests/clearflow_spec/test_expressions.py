"""User expressions are held to an allow-list: nothing reaches the JVM, files, the network or other tables."""

from __future__ import annotations

import pytest

from clearflow_spec import spec as S
from clearflow_spec.expressions import MAX_EXPRESSION_LENGTH, expression_error
from tests.clearflow_spec.test_pipeline_spec import errors_of, valid_spec

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        ("java_method('java.lang.System', 'getenv', 'X')", "'java_method' at line 1, column 1"),
        ("reflect('java.lang.System', 'getenv', 'X')", "'reflect'"),
        ("try_reflect('java.lang.System', 'exit', 0)", "'try_reflect'"),
        ("email = `reflect`('a', 'b')", "'reflect' at line 1, column 9"),
        ("upper(\n  java_method('a', 'b'))", "'java_method' at line 2, column 3"),
        ("(SELECT count(*) FROM range(1e11)) > 0", "'count'"),
        ("email IN (SELECT email FROM users)", "subqueries"),
        ("EXISTS (SELECT 1)", "subqueries"),
        ("size(array_repeat('x', 2147483647)) > 0", "'array_repeat'"),
        ("length(repeat(email, 100000000)) > 0", "'repeat'"),
        ("length(lpad(email, amount, 'x')) > 0", "'lpad'"),
        ("system.builtin.upper(email) = 'X'", "qualified"),
        ("my_udf(email)", "'my_udf'"),
        ("explode(array(1, 2)) > 0", "'explode'"),
        ("IDENTIFIER('java_method')('a', 'b')", "'IDENTIFIER'"),
        ("xpath_string(email, '/a')", "'xpath_string'"),
        ("current_user() = 'root'", "current_user"),
        ("count(*) OVER (PARTITION BY email) > 1", "'count'"),
    ],
)
def test_forbidden_expressions_name_the_function(expression, named):
    error = expression_error(expression)
    assert error is not None, expression
    assert named.lower() in error.lower(), error


@pytest.mark.parametrize(
    "expression",
    [
        "amount > 0 AND email IS NOT NULL",
        "split(email, '@')[1]",
        "CAST(amount AS DECIMAL(10, 2)) > 1.5 AND amount IN (1, 2, 3)",
        "CASE WHEN (amount > 1) THEN upper(email) ELSE lower(email) END",
        "exists(array(1, 2), x -> x > 1) AND left(email, 2) = 'ab' AND if(amount > 1, true, false)",
        "substring(email FROM 1 FOR 3) = 'abc' AND trim(BOTH ' ' FROM email) <> ''",
        "extract(YEAR FROM created_at) = 2026 AND date_trunc('hour', created_at) IS NOT NULL",
        "coalesce(get_json_object(email, '$.a'), sha2(email, 256), repeat('-', 3))",
        "'java_method(1)' = email",  # a string, not a call
    ],
)
def test_ordinary_expressions_pass(expression):
    assert expression_error(expression) is None


def test_size_and_nesting_are_bounded_before_parsing():
    assert "too long" in expression_error(" OR ".join(["amount = 1"] * 150_000))
    assert "too long" in expression_error("a" * (MAX_EXPRESSION_LENGTH + 1))
    assert "nested too deeply" in expression_error("(" * 3000 + "1" + ")" * 3000)
    assert "nested too deeply" in expression_error("NOT " * 2400 + "amount")
    assert "nested too deeply" in expression_error(" OR ".join(["a = 1"] * 1100))


def test_the_spec_parser_applies_the_check_so_the_job_does_too():
    # spark_jobs.run parses its spec file with parse_spec before the query starts: a spec written by hand
    # with a JVM call fails there, with the field's path.
    data = valid_spec()
    data["filter"] = "java_method('java.lang.System', 'exit', 0) IS NULL"
    data["transforms"][0]["expression"] = "reflect('java.lang.System', 'getenv', 'HOME')"
    errors = errors_of(data)
    assert "'java_method'" in errors["filter"]
    assert "'reflect'" in errors["transforms[0].expression"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Array(" * 3000 + "String" + ")" * 3000, "too long"),
        ("Array(" * 40 + "String" + ")" * 40, "nested too deeply"),
        ("FixedString(999999999999)", "FixedString needs a length 1..65535"),
    ],
)
def test_clickhouse_types_are_bounded(text, message):
    assert message in S.clickhouse_type_error(text)


def test_a_misspelt_field_is_answered_with_the_field_it_most_likely_meant():
    known = ["age", "email", "user.id"]
    assert expression_error("agee >= 18", known) == (
        "unknown field 'agee' (did you mean `age`?); known: age, email, user.id"
    )
    assert "(did you mean `user.id`?)" in expression_error("usr.id = 'x'", known)
    assert "did you mean" not in expression_error("country = 'FR'", known)  # nothing close: no guess
