"""`clearflow_spec.conversion`: which JSON values reach which ClickHouse column, as the job decides (fast, no Spark).

The expected outcomes are Spark's, observed by running the job (the parity test checks the whole battery).
"""

from __future__ import annotations

import pytest

from clearflow_spec.conversion import MISSING, convert, event_time_outcome, key_outcome, lookup

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


@pytest.mark.parametrize(
    ("value", "field_type", "column_type"),
    [
        ("42", "string", "Int32"),
        (" 7 ", "string", "Int32"),
        ("+7", "string", "Int64"),
        ("255", "string", "UInt8"),
        (None, "string", "Int32"),  # null into a non-Nullable column: written as the column default
        (MISSING, "int", "Int32"),
        (42, "int", "Int32"),
        ("1d", "float", "Float64"),  # Java's parseDouble
        ("nan", "float", "Float64"),
        ("1.005", "string", "Decimal(5, 2)"),  # rounded HALF_UP to 1.01
        ("true", "string", "Bool"),
        (1, "int", "Bool"),
        ("2024-1-5", "string", "Date"),
        ("2024-01-05 anything", "string", "Date"),
        ("2024-01-05T10:00", "datetime", "DateTime64(3, 'UTC')"),
        ("2024-01-05 10:00:00 UTC", "datetime", "DateTime64(3, 'UTC')"),
        ("2024-01-05T10:00:00.123456789+02:00", "string", "DateTime"),
        (1699999999123, "int", "DateTime"),  # epoch milliseconds
        ("123E4567-E89B-12D3-A456-426614174000", "uuid", "UUID"),
        ("192.168.0.1", "string", "IPv4"),
        ({"a": 1}, "json", "JSON"),
        ({"a": [1, 2]}, "string", "String"),
    ],
)
def test_values_that_reach_their_column(value, field_type, column_type):
    outcome = convert(value, field_type=field_type, column_type=column_type, field="f", column="c")
    assert outcome.ok, outcome.reason


@pytest.mark.parametrize(
    ("value", "field_type", "column_type", "reason"),
    [
        ("abc", "string", "Int32", "column 'c': cannot write 'abc' to Int32"),
        ("1.5", "string", "Int32", "column 'c': cannot write '1.5' to Int32"),  # no decimals into integers
        ("300", "string", "UInt8", "column 'c': cannot write '300' to UInt8"),
        ("-1", "string", "UInt32", "column 'c': cannot write '-1' to UInt32"),
        (1.0, "int", "Int64", "field 'f': cannot convert '1.0' to int"),
        (1e3, "int", "Int64", "field 'f': cannot convert '1000.0' to int"),  # Jackson re-writes the number
        (9223372036854775808, "int", "Int64", "field 'f': cannot convert '9223372036854775808' to int"),
        (2147483648, "int", "Int32", "column 'c': cannot write '2147483648' to Int32"),
        ("-nan", "float", "Float64", "field 'f': cannot convert '-nan' to float"),
        ("999.995", "string", "Decimal(5, 2)", "column 'c': cannot write '999.995' to Decimal(5, 2)"),
        (2, "int", "Bool", "column 'c': cannot write '2' to Bool"),
        ("yes", "bool", "Bool", "field 'f': cannot convert 'yes' to bool"),
        ("2024-02-30", "string", "Date", "column 'c': cannot write '2024-02-30' to Date"),
        ("2024-01-05T10:00Z", "datetime", "DateTime", "field 'f': cannot convert '2024-01-05T10:00Z' to datetime"),
        ("05/01/2024", "string", "DateTime", "column 'c': cannot write '05/01/2024' to DateTime"),
        ("123e4567e89b12d3a456426614174000", "uuid", "UUID", "field 'f': cannot convert "),
        ("256.1.1.1", "string", "IPv4", "column 'c': cannot write '256.1.1.1' to IPv4"),
        ("日本", "string", "FixedString(4)", "column 'c': cannot write '日本' to FixedString(4)"),  # 6 bytes
        ([1], "json", "JSON", "column 'c': cannot write '[1]' to JSON"),
        ('{"a":1,"a":2}', "string", "JSON", "column 'c': cannot write "),
    ],
)
def test_values_that_become_dead_letters_with_the_jobs_reason(value, field_type, column_type, reason):
    outcome = convert(value, field_type=field_type, column_type=column_type, field="f", column="c")
    assert not outcome.ok
    assert outcome.reason.startswith(reason)


def test_a_parent_that_is_not_an_object_refuses_the_record():
    outcome = convert(lookup({"user": "bob"}, "user.id"), field_type="int", column_type="Int64")
    assert (outcome.ok, outcome.stage) == (False, "record")
    assert convert(lookup({"user": None}, "user.id"), field_type="int", column_type="Int64").ok
    assert lookup({}, "user.id") is MISSING


def test_dedup_key_and_event_time():
    assert key_outcome({"id": "a1"}, "id", "string").ok
    assert key_outcome({"other": 1}, "id", "string").reason == "dedup key 'id' is missing or null"
    assert key_outcome({"id": None}, "id", "string").stage == "key"
    assert key_outcome({"id": "x"}, "id", "int").reason == "field 'id': cannot convert 'x' to int"
    assert event_time_outcome({"ts": "2024-01-05T10:00:00Z"}, "ts").ok
    assert event_time_outcome({"ts": 1699999999}, "ts").ok
    assert event_time_outcome({}, "ts").reason == "event time 'ts' is missing or null"
    assert event_time_outcome({"ts": "yesterday"}, "ts").reason == "field 'ts': cannot convert 'yesterday' to datetime"
