"""Avro in the pipeline spec (`source.format`, `source.schema_registry`, `source.avro_schema`) and Avro schemas
read as fields. Pure: no Spark, no registry."""

from __future__ import annotations

import json

import pytest

from clearflow_spec import spec as S
from clearflow_spec.avro_schema import SchemaField, schema_fields, split_wire_format, wire_format, wire_schema_id
from tests.clearflow_spec.test_pipeline_spec import errors_of, valid_spec

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "event_id", "type": "string"},
        {"name": "user", "type": {"type": "record", "name": "User", "fields": [{"name": "id", "type": "string"}]}},
        {"name": "email", "type": ["null", "string"], "default": None},
        {"name": "amount", "type": "double"},
        {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}


def avro_spec(**source: object) -> dict:
    data = valid_spec()
    data["source"].update({"format": "avro", **source})
    return data


def test_plain_avro_with_a_pasted_schema_parses() -> None:
    parsed = S.parse_spec(avro_spec(avro_schema=json.dumps(ORDER)))
    assert parsed.source.format == "avro"
    assert not parsed.source.uses_registry


def test_a_field_the_pasted_schema_lacks_is_an_error_under_its_path() -> None:
    data = avro_spec(avro_schema=json.dumps(ORDER))
    data["source"]["fields"].append({"path": "coupon", "type": "string"})
    assert errors_of(data) == {"source.fields[5].path": "field 'coupon' is not in the Avro schema"}


def test_an_array_field_is_read_as_text_or_json_only() -> None:
    data = avro_spec(avro_schema=json.dumps(ORDER))
    data["source"]["fields"].append({"path": "tags", "type": "int"})
    assert errors_of(data) == {
        "source.fields[5].type": (
            "field 'tags' is array<string> in the Avro schema: read it as array<string>, string or json, not int"
        )
    }


def test_avro_needs_a_registry_or_a_schema_and_json_takes_neither() -> None:
    assert errors_of(avro_spec()) == {
        "source.schema_registry": (
            "format avro needs a schema registry (Confluent wire format) or avro_schema (plain Avro)"
        )
    }
    both = avro_spec(avro_schema=json.dumps(ORDER), schema_registry={"url": "http://127.0.0.1:8081"})
    assert errors_of(both) == {"source.avro_schema": "give a schema registry or an Avro schema, not both"}
    data = valid_spec()
    data["source"]["schema_registry"] = {"url": "http://127.0.0.1:8081"}
    assert errors_of(data) == {
        "source.schema_registry": "a schema registry is for formats avro and protobuf; this source is json"
    }
    assert errors_of(avro_spec(avro_schema="{not json")) == {
        "source.avro_schema": "the Avro schema is not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)"
    }
    assert "source.format" in errors_of({**valid_spec(), "source": {**valid_spec()["source"], "format": "xml"}})


def test_the_registry_connection_is_checked_and_its_password_masked() -> None:
    registry = {"url": "https://registry.example.com:8081/apis/ccompat/v7/", "username": "ana", "password": "pw"}
    parsed = S.parse_spec(avro_spec(schema_registry=registry))
    assert parsed.source.uses_registry
    assert parsed.source.schema_registry.url == "https://registry.example.com:8081/apis/ccompat/v7"
    assert parsed.to_dict()["source"]["schema_registry"]["password"] == S.SECRET_MASK
    assert parsed.to_dict(reveal_secrets=True)["source"]["schema_registry"]["password"] == "pw"
    assert "pw" not in repr(parsed)
    errors = errors_of(avro_spec(schema_registry={"url": "registry:8081"}))
    assert errors == {
        "source.schema_registry.url": "invalid registry URL 'registry:8081': expected http(s)://host[:port][/path]"
    }
    errors = errors_of(avro_spec(schema_registry={"url": "http://r:8081", "username": "ana"}))
    assert errors == {"source.schema_registry": "username and password go together (basic auth)"}


def test_schema_fields_reads_nested_records_unions_enums_arrays_and_logical_types() -> None:
    schema = {
        "type": "record",
        "name": "Payment",
        "fields": [
            {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
            {"name": "paid_at", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["OPEN", "PAID"]}},
            {"name": "card", "type": {"type": "record", "name": "Card", "fields": [{"name": "last4", "type": "int"}]}},
            {"name": "previous", "type": ["null", "Status"], "default": None},
            {"name": "labels", "type": {"type": "map", "values": "string"}},
            {"name": "either", "type": ["int", "string"]},
        ],
    }
    assert schema_fields(schema) == [
        SchemaField("id", "uuid", "uuid", False, "UUID"),
        SchemaField("amount", "string", "decimal(10, 2)", False, "Decimal(10, 2)"),
        SchemaField("paid_at", "datetime", "timestamp-micros", True, "Nullable(DateTime64(6, 'UTC'))"),
        SchemaField("day", "datetime", "date", False, "Date"),
        SchemaField("status", "string", "enum", False, "LowCardinality(String)"),
        SchemaField("card.last4", "int", "int", False, "Int32"),
        SchemaField("previous", "string", "enum", True, "LowCardinality(Nullable(String))"),
        SchemaField("labels", "map<string,string>", "map<string>", False, "Map(String, Nullable(String))"),
        SchemaField("either", "json", "union", False, "String"),
    ]


def test_the_confluent_wire_format_frames_a_body_with_its_schema_id() -> None:
    assert wire_format(258, b"body") == b"\x00\x00\x00\x01\x02body"
    assert split_wire_format(b"\x00\x00\x00\x01\x02body") == (258, b"body")
    with pytest.raises(ValueError, match="first byte is 0x7B, expected 0x00"):
        split_wire_format(b'{"a": 1}')
    with pytest.raises(ValueError, match=r"too short for the Confluent wire format \(2 bytes\)"):
        split_wire_format(b"\x00\x01")


def test_the_web_app_and_the_job_draw_the_wire_formats_edges_alike() -> None:
    # The job's rule (spark_jobs.avro_decode): shorter than the 5-byte header or a first byte other than 0 is
    # not framed; a header alone is framed, with an empty body (which its schema then reads or refuses).
    assert split_wire_format(b"\x00\x00\x00\x00\x07") == (7, b"")
    assert wire_schema_id(b"\x00\x00\x00\x00\x07") == 7
    assert wire_schema_id(wire_format(258, b"body")) == 258
    for unframed in (None, b"", b"\x00\x00\x00\x07", b'{"a": 1}'):
        assert wire_schema_id(unframed) is None
    with pytest.raises(ValueError, match=r"too short for the Confluent wire format \(0 bytes\)"):
        split_wire_format(None)  # a record without a value
