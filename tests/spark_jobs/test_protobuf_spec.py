"""Protobuf in the pipeline spec (`source.format: protobuf` with `source.schema_registry`) and .proto schemas read
as fields. Pure: no Spark, no registry."""

from __future__ import annotations

import pytest

from clearflow_spec import spec as S
from clearflow_spec.avro_schema import SchemaField
from clearflow_spec.proto_parser import ProtobufSchemaError
from clearflow_spec.protobuf_schema import schema_fields
from clearflow_spec.schema_registry import SubjectVersion, registry_field_issues
from tests.clearflow_spec.test_pipeline_spec import errors_of, valid_spec
from tests.spark_jobs.protobuf_events import ORDER_PROTO

pytestmark = pytest.mark.fast


def protobuf_spec(**source: object) -> dict:
    data = valid_spec()
    data["source"].update({"format": "protobuf", **source})
    return data


def test_protobuf_reads_through_a_schema_registry_only() -> None:
    parsed = S.parse_spec(protobuf_spec(schema_registry={"url": "http://127.0.0.1:8081"}))
    assert parsed.source.format == "protobuf"
    assert parsed.source.uses_registry
    assert parsed.source.registry_schema_type == "PROTOBUF"
    assert errors_of(protobuf_spec()) == {
        "source.schema_registry": "format protobuf needs a schema registry (Confluent wire format, subjects "
        "<topic>-value)"
    }
    assert errors_of(protobuf_spec(schema_registry={"url": "http://r:8081"}, avro_schema="{}")) == {
        "source.avro_schema": "an Avro schema is for format avro; this source is protobuf"
    }


def test_a_field_the_registered_proto_lacks_is_an_error_under_its_path() -> None:
    fields = [S.FieldSpec(path="event_id", type="string"), S.FieldSpec(path="coupon", type="string")]
    versions = {"orders-value": [SubjectVersion("orders-value", 1, 7, "PROTOBUF", ORDER_PROTO)]}
    issues = registry_field_issues(fields, versions, kind="PROTOBUF")
    assert [(i.path, i.message) for i in issues] == [
        ("source.fields[1].path", "field 'coupon' is not in any version of subject 'orders-value'")
    ]
    avro_only = {"orders-value": [SubjectVersion("orders-value", 1, 7, "AVRO", '{"type": "record"}')]}
    issues = registry_field_issues(fields, avro_only, kind="PROTOBUF")
    assert [(i.path, i.message) for i in issues] == [
        ("source.topics", "subject 'orders-value' has only AVRO versions in the registry, no Protobuf")
    ]


def test_schema_fields_reads_nested_messages_enums_repeated_maps_oneofs_and_well_known_types() -> None:
    proto = """
    syntax = "proto3";
    package shop.v1;
    import "google/protobuf/timestamp.proto";
    import "google/protobuf/wrappers.proto";
    /* a payment */
    message Payment {
      string id = 1;
      sint64 cents = 2 [deprecated = true];
      google.protobuf.Timestamp paid_at = 3;
      Status status = 4;
      Card card = 5;
      map<string, string> labels = 6;
      repeated Card cards = 7;
      optional bool refunded = 8;
      google.protobuf.StringValue note = 9;
      oneof method { string iban = 10; uint32 terminal = 11; }
      bytes raw = 12;
      reserved 13 to 15;
      message Card { fixed32 last4 = 1; Payment parent = 2; }
      enum Status { OPEN = 0; PAID = 1; }
    }
    message Other { string x = 1; }
    """
    assert schema_fields(proto) == [
        SchemaField("id", "string", "string", False, "String"),
        SchemaField("cents", "int", "sint64", False, "Int64"),
        SchemaField("paid_at", "datetime", "Timestamp", True, "Nullable(DateTime64(6, 'UTC'))"),
        SchemaField("status", "string", "enum", False, "LowCardinality(String)"),
        SchemaField("card.last4", "int", "fixed32", True, "Nullable(UInt32)"),
        SchemaField("card.parent", "json", "Payment", True, "String"),
        SchemaField("labels", "map<string,string>", "map<string, string>", False, "Map(String, Nullable(String))"),
        SchemaField("cards", "json", "repeated Card", False, "String"),  # Card holds its Payment: no field type
        SchemaField("refunded", "bool", "bool", True, "Nullable(Bool)"),
        SchemaField("note", "string", "StringValue", True, "Nullable(String)"),
        SchemaField("iban", "string", "string", True, "Nullable(String)"),
        SchemaField("terminal", "int", "uint32", True, "Nullable(UInt32)"),
        SchemaField("raw", "string", "bytes", False, "String"),
    ]
    with pytest.raises(ProtobufSchemaError, match="has no message"):
        schema_fields('syntax = "proto3";')
    with pytest.raises(ProtobufSchemaError, match="unknown type 'Missing'"):
        schema_fields("message A { Missing m = 1; }")
