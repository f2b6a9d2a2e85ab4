"""Nested field types: their spelling, the columns they are written to and proposed for, the spec's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from clearflow_spec import field_types as ft
from clearflow_spec.clickhouse_types import parse_clickhouse_type
from clearflow_spec.spec import SpecError
from tests.specs import pipeline_spec

pytestmark = pytest.mark.fast

ITEMS = "array<struct<sku:string,qty:int>>"


@pytest.mark.parametrize(
    ("written", "spelled"),
    [
        ("array<int>", "array<int>"),
        ("Array< int >", "array<int>"),
        ("map<string, float>", "map<string,float>"),
        ("struct<sku: string, qty: int>", "struct<sku:string,qty:int>"),
        ("struct<`first name`:string>", "struct<`first name`:string>"),
        ("array<map<string,array<datetime>>>", "array<map<string,array<datetime>>>"),
    ],
)
def test_a_nested_type_has_one_spelling(written, spelled):
    assert ft.field_type_text(written) == spelled
    assert ft.field_type_text(spelled) == spelled


@pytest.mark.parametrize(
    ("written", "words"),
    [
        ("array<text>", "unknown field type 'text'"),
        ("map<int,string>", "a map's keys are strings"),
        ("struct<a:int,a:string>", "member 'a' is named twice"),
        ("array<int", "missing '>'"),
        ("array<" * 20 + "int" + ">" * 20, "nested too deeply"),
    ],
)
def test_a_type_that_is_not_one_is_refused_in_words(written, words):
    with pytest.raises(ValueError, match=words):
        ft.field_type_text(written)


@pytest.mark.parametrize(
    ("field_type", "column"),
    [
        ("array<string>", "Array(Nullable(String))"),
        ("map<string,int>", "Map(String, Nullable(Int64))"),
        (ITEMS, "Array(Tuple(sku Nullable(String), qty Nullable(Int64)))"),
        ("struct<at:datetime>", "Tuple(at Nullable(DateTime64(3, 'UTC')))"),
    ],
)
def test_the_proposed_column_takes_the_type(field_type, column):
    assert ft.default_clickhouse_type(field_type) == column
    assert parse_clickhouse_type(column).sql() == column
    assert ft.field_type_compatible(field_type, column)


@pytest.mark.parametrize(
    ("field_type", "column", "writable"),
    [
        ("array<int>", "Array(UInt32)", True),
        ("array<int>", "Array(LowCardinality(String))", True),
        ("array<string>", "Array(UUID)", True),
        ("array<bool>", "Array(Date)", False),
        ("array<int>", "Map(String, Int64)", False),
        ("array<int>", "String", True),
        ("array<int>", "JSON", False),  # JSON takes an object
        ("map<string,int>", "JSON", True),
        ("map<string,int>", "Map(LowCardinality(String), UInt8)", True),
        ("map<string,int>", "Map(UInt8, UInt8)", False),
        (ITEMS, "Nested(sku String, qty UInt32)", True),
        (ITEMS, "Array(Tuple(qty UInt32))", True),  # a Tuple may leave members out
        (ITEMS, "Array(Tuple(qty UInt32, price Float64))", False),  # not one it lacks
        (ITEMS, "Array(Tuple(String, UInt32))", False),  # a struct is written by name
        ("string", "Enum8('new' = 1, 'paid' = 2)", True),
        ("int", "Enum8('new' = 1)", False),
        ("string", "IPv6", True),
        ("int", "Array(Int64)", False),
    ],
)
def test_which_columns_a_nested_type_is_written_to(field_type, column, writable):
    assert ft.field_type_compatible(field_type, column) is writable


@pytest.mark.parametrize(
    ("column", "words"),
    [
        ("Tuple()", "expected a type name"),
        ("Nested(String)", "each element of a Nested is named"),
        ("Tuple(a String, Int64)", "all named or none"),
        ("Enum8('a' = 300)", "-128..127"),
        ("Enum16('a' = 1, 'a' = 2)", "twice"),
        ("Nullable(Tuple(a String))", r"Nullable\(Tuple\) is not allowed"),
    ],
)
def test_clickhouse_types_that_are_not_ones(column, words):
    with pytest.raises(ValueError, match=words):
        parse_clickhouse_type(column)


def test_merging_samples_merges_elements_and_members():
    assert ft.merge_types("array<int>", "array<float>") == "array<float>"
    assert ft.merge_types("array<struct<a:int>>", "array<struct<b:string>>") == "array<struct<a:int,b:string>>"
    assert ft.merge_types("array<int>", "int") == "json"


def _spec(dedup=None, **extra):
    return pipeline_spec(
        topics=["orders"],
        fields=[("id", "string"), ("items", ITEMS), ("tags", "array<string>")],
        columns=[("id", "id", "String"), ("items.sku", "sku", "String"), ("items.qty", "qty", "UInt32")],
        table="order_lines",
        dedup=dedup,
        kafka="kafka:9092",
        clickhouse=("clickhouse", 8123),
        **extra,
    )


def test_explode_makes_the_elements_members_fields():
    spec = _spec(explode="items")
    types = spec.field_types()
    assert types["items"] == "struct<sku:string,qty:int>"
    assert types["items.qty"] == "int"


@pytest.mark.parametrize(
    ("explode", "words"),
    [("nope", "unknown field 'nope'"), ("id", "field 'id' is a string, not an array")],
)
def test_explode_names_an_array_field(explode, words):
    with pytest.raises(SpecError, match=words):
        _spec(explode=explode)


def test_an_element_member_needs_explode_to_be_mapped():
    with pytest.raises(SpecError, match=r"unknown field 'items\.sku'"):
        _spec()


def test_a_nested_field_is_not_a_dedup_key():
    with pytest.raises(SpecError, match=r"array<string> field \('tags'\) cannot be a dedup key"):
        _spec(explode="items", dedup="tags")


DOCS = Path(__file__).resolve().parents[2] / "docs" / "pipeline-spec.md"


def _field_type_table() -> list[tuple[str, list[str], str]]:
    text = DOCS.read_text()
    table = text[text.index("| field type | written to (examples) | proposed |") :].split("\n\n")[0]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        examples = [example.strip().strip("`") for example in cells[1].split(";")]
        rows.append((cells[0].strip("`"), examples, cells[2].strip("`")))
    return rows


def test_the_docs_table_of_field_types_is_what_the_code_does():
    rows = _field_type_table()
    assert {name for name, _, _ in rows} >= set(ft.FIELD_TYPES)
    for field_type, examples, proposed in rows:
        assert ft.field_type_text(field_type) == field_type
        assert ft.default_clickhouse_type(field_type) == proposed, field_type
        for column in [*examples, proposed]:
            assert ft.field_type_compatible(field_type, column), (field_type, column)


@pytest.mark.parametrize(
    ("value", "field_type", "column", "reason"),
    [
        ([{"sku": "a", "qty": 1}], ITEMS, "Array(Tuple(qty UInt32))", None),
        (
            [{"sku": "a", "qty": 1}, {"sku": "b", "qty": -1}],
            ITEMS,
            "Nested(sku String, qty UInt32)",
            "field 'items[1].qty': cannot write '-1' to UInt32",
        ),
        (
            {"weight": "heavy"},
            "map<string,int>",
            "Map(String, Int64)",
            "field 'items.weight': cannot convert 'heavy' to int",
        ),
        (
            "none",
            "array<string>",
            "Array(String)",
            "field 'items': cannot convert 'none' to array<string>: not an array",
        ),
        ({"a": [1, 2]}, "map<string,array<int>>", "JSON", None),
    ],
)
def test_the_sample_check_names_the_element_as_the_job_does(value, field_type, column, reason):
    """The wizard's type check of a sample (`clearflow_spec.conversion`), for nested values: the job's reasons
    (`tests/spark_jobs/test_engine_nested.py` reads them from the real dead-letter table)."""
    from clearflow_spec import conversion

    outcome = conversion.convert(value, field_type=field_type, column_type=column, field="items", column="items")
    assert outcome.reason == reason if reason else outcome.ok
    assert conversion.supported(field_type, column)


def test_an_avro_array_of_records_is_an_array_of_structs():
    import json

    from clearflow_spec.avro_schema import schema_fields

    item = {
        "type": "record",
        "name": "Item",
        "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}],
    }
    schema = {
        "type": "record",
        "name": "Order",
        "fields": [
            {"name": "items", "type": {"type": "array", "items": item}},
            {"name": "attrs", "type": ["null", {"type": "map", "values": "long"}]},
            {"name": "mixed", "type": {"type": "array", "items": ["int", "string"]}},
        ],
    }
    fields = {f.path: (f.type, f.nullable, f.clickhouse_type) for f in schema_fields(json.dumps(schema))}
    assert fields == {
        "items": (ITEMS, False, "Array(Tuple(sku Nullable(String), qty Nullable(Int64)))"),
        "attrs": ("map<string,int>", True, "Map(String, Nullable(Int64))"),
        "mixed": ("json", False, "String"),
    }


def test_the_wizard_shows_a_nested_type_as_an_indented_tree():
    from webapp.wizard.templatetags.field_shapes import type_tree

    assert type_tree("array<struct<sku:string,tags:array<string>>>") == [
        {"depth": 1, "name": "[]", "type": "struct<sku:string,tags:array<string>>"},
        {"depth": 2, "name": "sku", "type": "string"},
        {"depth": 2, "name": "tags", "type": "array<string>"},
        {"depth": 3, "name": "[]", "type": "string"},
    ]
    assert type_tree("int") == type_tree("not a type<") == []


def test_the_wizard_offers_an_exploded_elements_members_as_fields():
    from webapp.wizard.steps.common import array_fields, exploded_fields

    fields = [
        {"path": "id", "type": "string", "nullable": False, "examples": ["o-1"]},
        {"path": "items", "type": ITEMS, "nullable": False, "examples": [[{"sku": "a", "qty": 1}]]},
        {"path": "tags", "type": "array<string>", "nullable": True, "examples": []},
    ]
    assert array_fields(fields) == ["items", "tags"]
    assert [(f["path"], f["type"]) for f in exploded_fields(fields, "items")] == [
        ("id", "string"),
        ("items", "struct<sku:string,qty:int>"),
        ("items.sku", "string"),
        ("items.qty", "int"),
        ("tags", "array<string>"),
    ]
    assert exploded_fields(fields, None) == fields
