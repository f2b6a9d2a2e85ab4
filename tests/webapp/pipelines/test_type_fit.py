"""`webapp.pipelines.type_fit` on sampled values (pure: no Kafka, no database)."""

from __future__ import annotations

import pytest

from clearflow_spec.spec import parse_spec
from webapp.pipelines import type_fit

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

EVENTS = [{"id": f"e{i}", "n": str(i) if i < 3 else "n/a", "user": {"age": i}} for i in range(4)] + [
    {"id": "e9", "n": None},  # null: written as the column default, never counted against the field
    "not an object",  # the job dead-letters it whatever the mapping: not counted either
]


def fit(field: str, field_type: str, column_type: str, **kwargs) -> type_fit.FieldFit:
    return type_fit.field_fit(
        values=EVENTS, field=field, field_type=field_type, column=field, column_type=column_type, **kwargs
    )


def test_the_three_states_and_their_words():
    assert fit("id", "string", "String").state == "fits"
    partial = fit("n", "string", "Int32")
    assert (partial.state, partial.fitting, partial.total) == ("partial", 3, 4)
    assert partial.message == "Fits 3 of 4 sampled values; the other 1 would go to dead letters."
    assert [(e.value, e.reason) for e in partial.examples] == [("n/a", "column 'n': cannot write 'n/a' to Int32")]
    cannot = fit("id", "string", "Int64")
    assert (cannot.state, cannot.fitting, cannot.total, cannot.blocking) == ("cannot_fit", 0, 5, True)
    assert [e.value for e in cannot.examples] == ["e0", "e1", "e2"]  # at most three
    assert fit("user.age", "int", "UInt8").state == "fits"
    assert fit("missing", "string", "Int32").state == "no_values"
    assert fit("id", "string", "Array(String)").state == "not_checked"  # not writable: the spec check says so


def test_accepting_dead_letters_unblocks_only_a_field_that_cannot_fit():
    assert fit("id", "string", "Int64", accepted=True).blocking is False
    assert fit("id", "string", "String", accepted=True).accepted is False


def test_key_presence():
    present = type_fit.key_presence(values=EVENTS, field="id", field_type="string")
    assert (present.total, present.unusable, present.message) == (5, 0, "")
    partly = type_fit.key_presence(values=EVENTS, field="user.age", field_type="int")
    assert (partly.missing, partly.blocking) == (1, False)
    assert partly.message.startswith("20% of the sampled events have no usable dedup key 'user.age'")
    none = type_fit.key_presence(values=EVENTS, field="request_id", field_type="string")
    assert none.blocking and none.share == 1.0
    unreadable = type_fit.key_presence(values=EVENTS, field="n", field_type="datetime", role="event_time")
    assert (unreadable.missing, unreadable.unconvertible) == (1, 1)  # "0".."2" are epoch seconds; "n/a" is not


def test_sample_check_reports_blocking_findings_with_spec_paths():
    spec = parse_spec(
        {
            "version": 1,
            "name": "p",
            "source": {
                "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
                "topics": ["t"],
                "fields": [{"path": "id", "type": "string"}, {"path": "request_id", "type": "string"}],
            },
            "dedup": {"keys": ["request_id"]},
            "transforms": [{"name": "upper_id", "expression": "upper(id)", "type": "string"}],
            "sink": {
                "clickhouse": {"host": "127.0.0.1"},
                "table": "t",
                "columns": [
                    {"field": "id", "column": "id", "type": "Int32"},
                    {"field": "upper_id", "column": "upper_id", "type": "String"},
                ],
            },
        }
    )
    report = type_fit.sample_check(spec=spec, values=EVENTS)
    assert [f.state for f in report.fields] == ["cannot_fit", "not_checked"]
    assert [i.path for i in type_fit.report_issues(spec, report)] == ["sink.columns[0].field", "dedup.keys[0]"]
    accepted = type_fit.sample_check(spec=spec, values=EVENTS, accept_dead_letters=["id"])
    assert [i.path for i in type_fit.report_issues(spec, accepted)] == ["dedup.keys[0]"]
    assert accepted.to_dict()["fields"][0]["accepted"] is True
