"""The join section of the spec (version 2): what loads, and each bad input's error at its field."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from clearflow_spec.spec import SpecError, parse_spec

pytestmark = pytest.mark.fast

DOCS = Path(__file__).resolve().parents[2] / "docs" / "pipeline-spec.md"


def doc_example() -> dict:
    """The complete join example of docs/pipeline-spec.md, as written."""
    section = DOCS.read_text().split("## Join (version 2)", 1)[1]
    return json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))


def errors(data: dict) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    return [str(issue) for issue in info.value.errors]


def test_the_documented_example_loads_with_prefixed_fields():
    spec = parse_spec(doc_example())
    assert spec.join is not None and spec.join.window_seconds == 1800 and spec.join.type == "left"
    types = spec.field_types()
    assert types["left.customer.id"] == "string" and types["right.paid"] == "float"
    assert types["right._kafka_timestamp"] == "datetime" and types["unpaid"] == "float"
    assert "order_id" not in types  # with a join, every field is named by its side


def test_a_version_1_spec_still_loads_and_a_join_needs_version_2():
    data = doc_example()
    plain = {key: value for key, value in data.items() if key != "join"}
    plain["version"] = 1
    plain["filter"], plain["transforms"] = None, []
    plain["sink"] = {**plain["sink"], "columns": [{"field": "order_id", "column": "order_id", "type": "String"}]}
    assert parse_spec(plain).version == 1
    data["version"] = 1
    assert errors(data) == ["version: a join needs version 2 (version 1 has no join)"]


def test_keys_of_different_types_are_an_error_at_the_right_key():
    data = doc_example()
    data["join"]["keys"][0]["right"] = "paid"
    assert errors(data) == [
        "join.keys[0].right: key types differ: 'paid' is float on the right, 'order_id' is string on the left; "
        "join fields of the same type"
    ]


def test_unknown_names_are_errors_at_their_side():
    data = copy.deepcopy(doc_example())
    data["join"]["keys"] = [{"left": "nope", "right": "order_id"}]
    data["join"]["dedup"]["keys"] = ["missing"]
    data["sink"]["columns"][0]["field"] = "order_id"  # unprefixed: not a name of a joined row
    assert errors(data) == [
        "join.dedup.keys[0]: unknown field 'missing'; add it to join.source.fields",
        "join.keys[0].left: unknown field 'nope'; add it to source.fields",
        "sink.columns[0].field: unknown field 'order_id'; with a join, name it by its side: left.order_id or "
        "right.order_id",
    ]


def test_event_time_needs_a_datetime_field_on_each_side():
    data = doc_example()
    data["join"]["time"] = "event"
    assert errors(data) == ["join: time 'event' needs left_time_field and right_time_field"]
    data["join"]["left_time_field"], data["join"]["right_time_field"] = "amount", "paid_at"
    assert errors(data) == [
        "join.left_time_field: field 'amount' must have type datetime, not float",
        "join.right_time_field: unknown field 'paid_at'; add it to join.source.fields",
    ]
