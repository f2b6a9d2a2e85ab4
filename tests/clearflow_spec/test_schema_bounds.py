"""Schema bombs: a schema that reuses one type at each level, or nests far, is refused by name in words, fast,
and never reaches Python's recursion limit (Avro, Protobuf, and the fields inferred from sampled JSON)."""

from __future__ import annotations

import json
import time

import pytest

from clearflow_spec import limits
from clearflow_spec.avro_schema import AvroSchemaError, schema_fields
from clearflow_spec.proto_parser import ProtobufSchemaError
from clearflow_spec.protobuf_schema import schema_fields as proto_fields

pytestmark = pytest.mark.fast

LEVELS = 17  # 2^17 = 131,072 fields: seconds of work and memory before the budget


def doubling_avro(levels: int = LEVELS) -> str:
    """Record L0 holds two fields of record L1 (defined once, then named), which holds two of L2, ..."""
    inner: dict = {"type": "record", "name": f"L{levels}", "fields": [{"name": "x", "type": "long"}]}
    for level in range(levels - 1, -1, -1):
        inner = {
            "type": "record",
            "name": f"L{level}",
            "fields": [{"name": "a", "type": inner}, {"name": "b", "type": f"L{level + 1}"}],
        }
    return json.dumps(inner)


def nested_avro(levels: int) -> str:
    """Records nested `levels` deep, as text (json.dumps itself recurses once per level)."""
    opening = "".join(f'{{"type": "record", "name": "N{i}", "fields": [{{"name": "n", "type": ' for i in range(levels))
    leaf = f'{{"type": "record", "name": "N{levels}", "fields": [{{"name": "x", "type": "long"}}]}}'
    return opening + leaf + "}]}" * levels


def doubling_proto(levels: int = LEVELS) -> str:
    lines = ['syntax = "proto3";']
    for level in range(levels):
        lines.append(f"message L{level} {{ L{level + 1} a = 1; L{level + 1} b = 2; }}")
    lines.append(f"message L{levels} {{ int64 x = 1; }}")
    return "\n".join(lines)


def nested_proto(levels: int) -> str:
    return (
        'syntax = "proto3";\n' + "".join(f"message M{i} {{ " for i in range(levels)) + "int64 x = 1; " + ("}" * levels)
    )


def _refused(read, text: str, error: type[Exception]) -> str:
    started = time.monotonic()
    with pytest.raises(error) as caught:
        read(text)
    assert time.monotonic() - started < 2
    assert isinstance(caught.value, limits.LimitError)
    return str(caught.value)


def test_an_avro_schema_that_doubles_at_each_level_is_refused_at_the_field_budget():
    message = _refused(schema_fields, doubling_avro(), AvroSchemaError)
    assert "too many fields: more than 10,000 (cap: schema_fields)" in message


@pytest.mark.parametrize("levels", [40, 400])
def test_an_avro_schema_nested_past_the_depth_cap_is_refused_by_name(levels):
    message = _refused(schema_fields, nested_avro(levels), AvroSchemaError)
    assert "cap: schema_depth" in message


def test_avro_json_nested_past_what_json_reads_is_refused_in_words():
    deep = '{"type": "record", "name": "r", "fields": [{"name": "a", "type": ' + "[" * 50_000 + "]" * 50_000 + "}]}"
    assert "too deep" in _refused(schema_fields, deep, AvroSchemaError)


def test_an_avro_schema_at_the_depth_cap_still_reads():
    fields = schema_fields(nested_avro(limits.SCHEMA_DEPTH.maximum - 1))
    assert [field.path for field in fields] == [".".join(["n"] * (limits.SCHEMA_DEPTH.maximum - 1) + ["x"])]


def test_a_proto_that_doubles_at_each_level_is_refused_at_the_field_budget():
    message = _refused(proto_fields, doubling_proto(), ProtobufSchemaError)
    assert "too many fields: more than 10,000 (cap: schema_fields)" in message


@pytest.mark.parametrize("levels", [40, 1_200])
def test_a_proto_nested_past_the_depth_cap_is_refused_by_name(levels):
    assert "cap: schema_depth" in _refused(proto_fields, nested_proto(levels), ProtobufSchemaError)


def test_a_chain_of_messages_past_the_depth_cap_is_refused_by_name():
    lines = ['syntax = "proto3";', *(f"message C{i} {{ C{i + 1} c = 1; }}" for i in range(1_200)), "message C1200 {}"]
    assert "cap: schema_depth" in _refused(proto_fields, "\n".join(lines), ProtobufSchemaError)


def test_the_registry_check_names_the_cap_instead_of_every_field_missing():
    from clearflow_spec.schema_registry import SubjectVersion, registry_field_issues
    from clearflow_spec.spec import FieldSpec

    version = SubjectVersion("orders-value", 1, 7, "PROTOBUF", doubling_proto())
    issues = registry_field_issues([FieldSpec(path="a.a.x", type="int")], {"orders-value": [version]}, kind="PROTOBUF")
    assert [issue.path for issue in issues] == ["source.topics"]
    assert "version 1 (schema id 7)" in issues[0].message and "cap: schema_fields" in issues[0].message


def test_json_events_with_more_paths_than_the_budget_are_refused_in_words():
    from webapp.connections.selectors import schema_infer
    from webapp.core.exceptions import ApplicationError

    wide = {f"k{i}": i for i in range(limits.SCHEMA_FIELDS.maximum + 1)}
    with pytest.raises(ApplicationError) as caught:
        schema_infer(values=[wide])
    assert caught.value.status_code == 400
    assert "too many fields: more than 10,000 (cap: schema_fields)" in caught.value.message


def test_a_schema_bomb_is_a_400_naming_the_cap_not_a_500():
    from webapp.connections.selectors import schema_infer
    from webapp.core.exceptions import ApplicationError

    for text in (doubling_proto(), nested_proto(1_200), nested_avro(400)):
        with pytest.raises(ApplicationError) as caught:
            schema_infer(values=[], avro_schema=text)
        assert "(cap: schema_" in caught.value.message and caught.value.status_code == 400
