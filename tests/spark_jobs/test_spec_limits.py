"""A spec's size is capped, each cap refused with its name and path, and every check is linear in the spec."""

from __future__ import annotations

import copy
import re
import time
from pathlib import Path

import pytest

from clearflow_spec import limits as L
from clearflow_spec import spec as S
from tests.clearflow_spec.test_pipeline_spec import errors_of, valid_spec

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

DOCS = Path(__file__).resolve().parents[2] / "docs" / "pipeline-spec.md"


def wide(n_fields: int) -> dict:
    data = valid_spec()
    data["source"]["fields"] += [{"path": f"f{i}", "type": "string"} for i in range(n_fields - 5)]
    return data


def test_the_55000_field_spec_is_refused_by_the_fields_cap():
    errors = errors_of(wide(55_000))
    assert errors == {"source.fields": "too many fields: 55,000, at most 1,000 (cap: fields)"}


def test_a_spec_at_the_caps_is_valid():
    data = wide(L.FIELDS.maximum)
    data["sink"]["columns"] += [
        {"field": f"f{i % 900}", "column": f"c{i}", "type": "String"} for i in range(L.COLUMNS.maximum - 4)
    ]
    data["transforms"] += [
        {"name": f"t{i}", "expression": f"upper(f{i})", "type": "string"} for i in range(L.TRANSFORMS.maximum - 1)
    ]
    parsed = S.parse_spec(data)
    assert len(parsed.source.fields) == L.FIELDS.maximum and len(parsed.sink.columns) == L.COLUMNS.maximum


def _over(limit: L.Limit, data: dict) -> None:
    """Put one more item (or character) than `limit` allows at its first place in `data`."""
    item = {
        "fields": {"path": "x", "type": "string"},
        "topics": "t",
        "dedup_keys": "event_id",
        "transforms": {"name": "t", "expression": "1", "type": "int"},
        "columns": {"field": "event_id", "column": "c", "type": "String"},
        "order_by": "event_id",
    }
    section, _, key = limit.paths[0].replace("[]", "").rpartition(".")
    parent = data
    for part in filter(None, section.split(".")):
        parent = parent[part]
    if limit.name in item:
        parent[key] = [copy.deepcopy(item[limit.name]) for _ in range(limit.maximum + 1)]
    elif limit.name == "name_length":
        parent = data["source"]["fields"][0]
        parent["path"] = "a" * (limit.maximum + 1)
    elif limit.name == "type_length":
        data["sink"]["columns"][0]["type"] = "String" + " " * limit.maximum
    elif limit.name == "expression_length":
        data["filter"] = "amount > " + "1" * limit.maximum


SIZE_LIMITS = [L.FIELDS, L.TOPICS, L.DEDUP_KEYS, L.TRANSFORMS, L.COLUMNS, L.ORDER_BY, L.NAME_LENGTH, L.TYPE_LENGTH]


@pytest.mark.parametrize("limit", [*SIZE_LIMITS, L.EXPRESSION_LENGTH], ids=lambda limit: limit.name)
def test_each_cap_is_refused_with_its_name_and_path(limit):
    data = valid_spec()
    _over(limit, data)
    errors = errors_of(data)
    assert len(errors) == 1, errors
    ((path, message),) = errors.items()
    expected_path = {"name_length": "source.fields[0].path", "type_length": "sink.columns[0].type"}
    assert path == expected_path.get(limit.name, limit.paths[0].replace("[]", ""))
    assert f"(cap: {limit.name})" in message and f"at most {limit.maximum:,}" in message


def test_the_expressions_together_are_capped():
    data = valid_spec()
    # 8,012 characters each, under the cap for one; seven of them and the filter: 56,094
    expression = "upper(email)" + " || upper(email)" * 500
    data["transforms"] = [{"name": f"t{i}", "expression": expression, "type": "string"} for i in range(7)]
    assert errors_of(data) == {"transforms": "too long: 56,094 characters, at most 50,000 (cap: expressions_length)"}


def test_an_oversized_list_is_refused_before_its_items_are_read():
    data = wide(55_000)
    data["source"]["fields"][-1] = {"path": "1 not a path", "type": "nope"}  # never reported: the cap comes first
    assert list(errors_of(data)) == ["source.fields"]


def test_the_time_budget_refuses_with_its_name():
    budget = S.ValidationBudget(seconds=0)
    time.sleep(0.01)
    with pytest.raises(S.SpecError) as info:
        S.expression_issues(["a"], None, [("t", "a + 1")], budget)
    (issue,) = info.value.errors
    assert issue.path == "transforms[0].expression"
    assert "(cap: validation_seconds)" in issue.message and "make it smaller" in issue.message


def test_duplicate_and_parent_fields_are_still_found_among_many():
    data = wide(L.FIELDS.maximum)
    data["source"]["fields"][600] = {"path": "f7", "type": "string"}  # f7 is fields[12]
    data["source"]["fields"][900] = {"path": "f300.x", "type": "string"}  # f300 is fields[305]
    errors = errors_of(data)
    assert errors["source.fields[12].path"] == "field 'f7' is listed twice"
    assert errors["source.fields[600].path"] == "field 'f7' is listed twice"
    assert errors["source.fields[305].path"] == "'f300' is both a field and the parent of another field"


def test_an_unknown_name_among_many_fields_lists_a_few_known_ones():
    data = wide(L.FIELDS.maximum)
    data["filter"] = "nope > 1"
    message = errors_of(data)["filter"]
    assert message.startswith("unknown field 'nope'; known: ")
    assert message.endswith("and 986 more") and len(message) < 400


def test_every_cap_is_documented_with_its_value():
    text = DOCS.read_text()
    docs = text[text.index("## Limits") :]
    docs = docs[: docs.index("\n## ", 1)]
    for limit in L.LIMITS:
        row = re.search(rf"^\| `{limit.name}` \|([^\n]*)$", docs, re.MULTILINE)
        assert row, f"docs/pipeline-spec.md has no row for the cap {limit.name}"
        assert f"{limit.maximum:,}" in row.group(1), (limit.name, row.group(1))
