"""Expressions are bounded by what they build (nested size-growing functions multiply) and by their regex
patterns (no catastrophic backtracking); each refusal says why in plain words."""

from __future__ import annotations

import pytest

from clearflow_spec.expressions import expression_error
from clearflow_spec.regex_safety import regex_problem

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

KNOWN = ["email", "name", "tags", "amount", "n"]


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("repeat(repeat(repeat(email, 10000), 10000), 10000)", "times the size of the event's values"),
        ("length(repeat(repeat(email, 200), 200)) > 0", "40,000 times"),
        ("repeat(space(10000), 10000)", "100,000,000 characters"),
        ("array_join(array_repeat('', 10000), repeat('x', 10000))", "(cap: expression_output)"),
        ("transform(array_repeat(email, 10000), x -> repeat(x, 10000))", "(cap: expression_growth)"),
        ("hex(hex(hex(hex(hex(hex(hex(hex(hex(hex(hex(hex(hex(hex(email))))))))))))))", "16,384 times"),
        ("replace(email, 'a', email)", "square of the event's values"),
        ("aggregate(tags, '', (acc, x) -> concat(acc, acc))", "accumulator can grow 2 times"),
        ("sequence(1, 100000000)", "(cap: expression_output)"),
        ("sequence(1, n)", "whole-number literals"),
        ("format_number(amount, 100000000)", "(cap: expression_output)"),
    ],
)
def test_nested_growth_is_refused(expression, reason):
    error = expression_error(expression, KNOWN)
    assert error is not None and reason in error, error


@pytest.mark.parametrize(
    "expression",
    [
        "repeat(email, 10000)",
        "lpad(name, 10, '0')",
        "concat(name, '-', upper(email))",
        "transform(tags, x -> upper(x))",
        "transform(transform(tags, x -> upper(x)), y -> lower(y))",
        "filter(tags, x -> x != 'a')",
        "exists(tags, x -> x = 'vip')",
        "aggregate(tags, 0, (acc, x) -> acc + length(x))",
        "size(sequence(1, 10)) > 1",
        "replace(name, ' ', '_')",
        "array_join(tags, ', ')",
        "to_json(named_struct('a', email, 'b', tags))",
        "case when amount > 1 then 'big' else name end",
        "regexp_replace(email, '[^a-z0-9]', '')",
        "regexp_extract(email, '^([^@]+)@', 1)",
        "email rlike '^[a-z0-9._%+-]+@[a-z0-9.-]+\\\\.[a-z]{2,}$'",
        "split(email, '@')[0]",
    ],
)
def test_ordinary_expressions_pass(expression):
    assert expression_error(expression, KNOWN) is None


@pytest.mark.parametrize(
    "expression",
    [
        "regexp_like(email, '(a+)+$')",
        "email rlike '(a|a)*'",
        "email regexp '(a|ab)*c'",
        "rlike(email, '([a-z]+)*@')",
        "regexp_extract(email, '(x+x+)+y', 1)",
        "regexp_extract_all(email, '(\\\\w|\\\\d)+', 0)",
        "regexp_replace(email, '(a*)*', '')",
        "regexp_count(email, '(a+)+') > 0",
        "split(email, '(a+)+')",
        "str_to_map(email, '(a+)+', ':')",
        "regexp(email, '(a+)+')",
    ],
)
def test_catastrophic_patterns_are_refused_in_every_regex_function(expression):
    error = expression_error(expression, KNOWN)
    assert error is not None and "exponential time" in error, error


def test_a_pattern_must_be_a_literal():
    error = expression_error("rlike(email, name)", KNOWN)
    assert "must be a string literal" in error


@pytest.mark.parametrize(
    "pattern", ["(a+)+$", "(a*)*", "(x{1,3})+", "((a|a)c)+", "(a|)+", "(?:a+)+b", "(a)\\1", "(\\w|\\d)+"]
)
def test_dangerous_patterns(pattern):
    assert regex_problem(pattern) is not None


@pytest.mark.parametrize(
    "pattern",
    [
        "^[a-z]+@example\\.com$",
        "(a|b)+",
        "(foo|bar)*",
        "a+b+",
        "(ab)+",
        "(a++)+",
        "(a+)++",
        "(?>a+)+",
        "\\d{3}-\\d{4}",
        "^\\s*-?[0-9]+(\\.[0-9]+)?\\s*$",
        "\\Q(a+)+\\E",
        "[(]a+[)]+",
        "(?<user>[^@]+)@",
        "[^,]+",
    ],
)
def test_safe_patterns(pattern):
    assert regex_problem(pattern) is None


@pytest.mark.parametrize(
    "pattern",
    [
        "a*a*a*a*a*a*b",  # 38.7 s on 75 characters in Java 17
        "\\d+\\d+",
        "\\w+\\s*\\w+",
        ".*.*=.*",
        "(x+a*)a*",
        "a{1,1000}a{1,1000}b",
        ".*a.*a.*b",
        "[\\x61-\\x62]*a*c",
    ],
)
def test_polynomial_backtracking_is_refused(pattern):
    problem = regex_problem(pattern)
    assert problem is not None and "to the power" in problem, problem


def test_polynomial_backtracking_is_refused_in_an_expression():
    error = expression_error("rlike(email, 'a*a*a*a*a*a*b')", KNOWN)
    assert error is not None and "repeated parts in a row" in error, error


@pytest.mark.parametrize(
    "pattern",
    [
        "(\\x61|a)+$",
        "(\\x{61}|a)+$",
        "(\\u0061|a)+$",
        "(\\0141|a)+$",
        "(\\N{LATIN SMALL LETTER A}|a)+$",
        "(\\cA|\\x01)+",
    ],
)
def test_escapes_are_read_as_the_characters_they_stand_for(pattern):
    assert "can match the same text" in regex_problem(pattern)


@pytest.mark.parametrize(
    "pattern", ["(\\x61|b)+", "(\\u0061|\\x62)+", "[\\x30-\\x39]+-[a-z]+", ".*foo.*", "a{1,5}a{1,5}"]
)
def test_escaped_characters_and_short_chains_that_cannot_clash_are_allowed(pattern):
    assert regex_problem(pattern) is None


def test_a_broken_pattern_says_what_is_wrong():
    assert "no matching ')'" in regex_problem("(ab")
    assert "no matching '('" in regex_problem("ab)")
