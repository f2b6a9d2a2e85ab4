"""Fields the events carry that the pipeline does not read, and schema changes' effect on the mapping, from
metrics records as the job publishes them. Pure: no Spark."""

from __future__ import annotations

import json

from clearflow_spec import spec as S
from clearflow_spec.field_changes import field_changes
from spark_jobs.metrics import metrics_from_progress
from tests.clearflow_spec.test_pipeline_spec import valid_spec
from tests.spark_jobs.test_avro_spec import ORDER, avro_spec

V2 = {
    **ORDER,
    "fields": [
        *[f for f in ORDER["fields"] if f["name"] != "amount"],
        {"name": "amount", "type": "string"},
        {"name": "coupon", "type": ["null", "string"], "default": None},
    ],
}
V3 = {**V2, "fields": [f for f in V2["fields"] if f["name"] != "email"]}


def record(timestamp: str, **observed: object) -> dict:
    return {"timestamp": timestamp, **observed}


def test_a_new_avro_field_is_reported_with_its_type_events_and_first_time() -> None:
    spec = S.parse_spec(avro_spec(avro_schema=json.dumps(ORDER)))
    schemas = {1: json.dumps(ORDER), 2: json.dumps(V2)}
    records = [
        record("2026-11-25T09:58:00.000Z", events_by_schema_id={"1": 500}),
        record("2026-11-25T10:02:13.000Z", events_by_schema_id={"1": 3, "2": 1000}),
        record("2026-11-25T10:03:00.000Z", events_by_schema_id={"2": 204}),
    ]
    changes = field_changes(spec, schemas, records)
    new = [c for c in changes if c.kind == "new"]
    assert [c.message() for c in new] == [
        "new field `tags` (array<string>) seen in 1,707 events since 09:58",
        "new field `coupon` (string or null) seen in 1,204 events since 10:02",
    ]
    assert (new[1].field_type, new[1].clickhouse_type) == ("string", "Nullable(String)")
    retyped = [c.message() for c in changes if c.kind == "retyped"]
    assert retyped == [
        "field `amount` is now string in schema id 2 (1,204 events since 10:02): "
        "values that do not convert to float are dead letters"
    ]


def test_a_removed_field_says_what_its_column_gets() -> None:
    spec = S.parse_spec(avro_spec(avro_schema=json.dumps(ORDER)))
    schemas = {1: json.dumps(ORDER), 3: json.dumps(V3)}
    records = [record("2026-11-25T11:00:00.000Z", events_by_schema_id={"3": 10})]
    removed = [c.message() for c in field_changes(spec, schemas, records) if c.kind == "removed"]
    assert removed == ["field `email` is gone from schema id 3 (10 events since 11:00): the pipeline reads NULL for it"]


def test_new_json_keys_come_from_the_sample_and_are_estimated() -> None:
    spec = S.parse_spec(valid_spec())
    records = [
        record("2026-11-25T10:00:00.000Z", unmapped_keys=[], sampled_with_unmapped=0, sample_every=16),
        record(
            "2026-11-25T10:02:00.000Z", unmapped_keys=["coupon", "user.tier"], sampled_with_unmapped=50, sample_every=16
        ),
        record("2026-11-25T10:03:00.000Z", unmapped_keys=["coupon"], sampled_with_unmapped=25, sample_every=16),
    ]
    assert [c.message() for c in field_changes(spec, {}, records)] == [
        "new field `coupon` seen in about 1,200 events since 10:02",
        "new field `user.tier` seen in about 1,200 events since 10:02",
    ]


def test_the_metrics_record_carries_the_fields_observation() -> None:
    progress = {
        "batchId": 4,
        "timestamp": "2026-11-25T10:02:13.000Z",
        "numInputRows": 30,
        "observedMetrics": {"cf_fields": {"schema_id_1": 10, "schema_id_2": 20}},
    }
    metrics = metrics_from_progress("p", progress, {})
    assert metrics.events_by_schema_id == {"1": 10, "2": 20}
    progress["observedMetrics"] = {"cf_fields": {"unmapped_keys": ["coupon"], "sampled": 2, "sampled_with_unmapped": 1}}
    metrics = metrics_from_progress("p", progress, {})
    assert (metrics.unmapped_keys, metrics.sampled_events, metrics.sampled_with_unmapped) == (["coupon"], 2, 1)
