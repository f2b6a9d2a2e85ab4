from __future__ import annotations

import pytest

from webapp.connections.schema import infer_schema, value_type

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


def by_path(values):
    return {f.path: f for f in infer_schema(values)}


def test_nested_paths_and_types():
    fields = by_path(
        [
            {
                "id": 1,
                "price": 2.5,
                "ok": True,
                "name": "x",
                "at": "2026-11-01T12:00:00Z",
                "uid": "0f8fad5b-d9cb-469f-a165-70867728950e",
                "user": {"id": 7, "address": {"city": "Berlin"}},
                "tags": ["a"],
                "meta": {},
            }
        ]
    )
    assert {p: f.type for p, f in fields.items()} == {
        "id": "int",
        "price": "float",
        "ok": "bool",
        "name": "string",
        "at": "datetime",
        "uid": "uuid",
        "user.id": "int",
        "user.address.city": "string",
        "tags": "array<string>",
        "meta": "json",
    }
    assert not any(f.nullable for f in fields.values())


def test_types_widen_and_missing_or_null_is_nullable():
    fields = by_path(
        [
            {"n": 1, "when": "2026-11-01 12:00:00", "s": "2026-11-01T12:00:00+02:00", "opt": None},
            {"n": 2.0, "when": "2026-11-01T12:00:00.123456", "s": "hello", "extra": 1, "opt": None},
        ]
    )
    assert fields["n"].type == "float"
    assert fields["when"].type == "datetime"
    assert fields["s"].type == "string"
    assert fields["extra"].nullable and fields["extra"].present == 1
    assert fields["opt"].nullable and fields["opt"].type == "string"
    assert not fields["n"].nullable


def test_value_type_recognition():
    assert value_type("2026-11-01") == "string"  # a date alone is not a timestamp
    assert value_type("2026-13-45T99:00:00Z") == "string"
    assert value_type("0F8FAD5B-D9CB-469F-A165-70867728950E") == "uuid"
    assert value_type("0f8fad5b-d9cb-469f-a165-70867728950") == "string"
    assert value_type(False) == "bool"
    assert value_type(None) is None


def test_non_objects_are_skipped_and_empty_input_gives_no_fields():
    assert infer_schema([]) == []
    assert [f.path for f in infer_schema(["text", 3, [1], {"a": 1}])] == ["a"]


def test_deep_nesting_stops_at_a_json_leaf():
    value: dict = {"leaf": 1}
    for _ in range(40):
        value = {"n": value}
    fields = infer_schema([value])
    assert len(fields) == 1
    assert fields[0].path == ".".join(["n"] * 16)
    assert fields[0].type == "json"
