"""The one table of field types: each type's properties, inference from JSON values, and that every reader
(the spec, the engine, the web app's inference and the wizard's lists) sees the same types."""

from __future__ import annotations

import pytest

from clearflow_spec import field_types as ft
from clearflow_spec.spec import FieldSpec, SpecError, parse_spec

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, "bool"),
        (3, "int"),
        (3.5, "float"),
        ("hello", "string"),
        ("2026-01-02T03:04:05Z", "datetime"),
        ("2026-01-02 03:04", "datetime"),
        ("2026-13-02T03:04:05Z", "string"),  # month 13: looks like a date-time, is not one
        ("f47ac10b-58cc-4372-a567-0e02b2c3d479", "uuid"),
        ("f47ac10b58cc4372a5670e02b2c3d479", "string"),
        ({"a": 1}, "json"),
        ([1, 2], "array<int>"),
        ([1, 2.5, None], "array<float>"),
        (
            [{"sku": "a", "qty": 1}, {"sku": "b", "at": "2026-01-02T03:04:05Z"}],
            "array<struct<sku:string,qty:int,at:datetime>>",
        ),
        ([[1], ["x"]], "array<array<json>>"),
        ([], "array<string>"),
        (None, None),
    ],
)
def test_value_type(value, expected):
    assert ft.value_type(value) == expected


@pytest.mark.parametrize(
    ("a", "b", "merged"),
    [
        ("int", "float", "float"),
        ("float", "int", "float"),
        ("uuid", "string", "string"),
        ("datetime", "uuid", "string"),
        ("int", "string", "json"),
        ("bool", "int", "json"),
        (None, "int", "int"),
        ("json", "json", "json"),
    ],
)
def test_merge_types(a, b, merged):
    assert ft.merge_types(a, b) == merged


def test_every_type_is_in_the_spec_and_written_to_its_default_column():
    assert ft.FIELD_TYPES == ("string", "int", "float", "bool", "datetime", "uuid", "json")
    for name in ft.FIELD_TYPES:
        assert FieldSpec(path="x", type=name).type == name
        assert ft.field_type_compatible(name, ft.default_clickhouse_type(name))
        assert ft.always_fits(name, ft.default_clickhouse_type(name)) or name == "json"
    with pytest.raises(SpecError) as raised:
        parse_spec({"version": 1, "name": "x", "source": {"fields": [{"path": "a", "type": "integer"}]}})
    assert any(issue.path == "source.fields[0].type" for issue in raised.value.errors)


def test_the_wizard_lists_come_from_the_table():
    assert [value for value, _ in ft.FIELD_TYPE_CHOICES] == list(ft.FIELD_TYPES)
    assert dict(ft.FIELD_TYPE_CHOICES)["datetime"] == "datetime (ISO-8601 or epoch)"
    assert "Nullable(DateTime64(3, 'UTC'))" in ft.NEW_TABLE_COLUMN_TYPES
    assert "LowCardinality(String)" in ft.NEW_TABLE_COLUMN_TYPES
    assert "Nullable(JSON)" not in ft.NEW_TABLE_COLUMN_TYPES
    assert len(ft.NEW_TABLE_COLUMN_TYPES) == len(set(ft.NEW_TABLE_COLUMN_TYPES)) == 26
    for column_type in ft.NEW_TABLE_COLUMN_TYPES:
        assert any(ft.field_type_compatible(name, column_type) for name in ft.FIELD_TYPES), column_type


def test_the_web_app_infers_with_the_same_table():
    from webapp.connections import schema

    assert schema.value_type is ft.value_type and schema.FIELD_TYPES is ft.FIELD_TYPES
    fields = schema.infer_schema([{"n": 1, "id": "f47ac10b-58cc-4372-a567-0e02b2c3d479"}, {"n": 2.5, "id": "x"}])
    assert [(f.path, f.type) for f in fields] == [("n", "float"), ("id", "string")]


def test_unknown_field_types_are_refused():
    assert not ft.field_type_compatible("text", "String")
    with pytest.raises(ValueError, match="unknown field type 'text'"):
        ft.default_clickhouse_type("text")
