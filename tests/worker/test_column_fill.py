"""Filling a column added for a new field on the rows written before it, against the real Kafka and ClickHouse (no
Spark job: the rows are written here as the job writes them). The topic has already dropped its oldest events, as
retention does: the fill says so in words, fills the rest exactly once, and a second fill changes nothing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tests.specs import EVENT_COLUMNS, EVENT_FIELDS, spec_dict
from tests.worker.helpers import create_pipeline, event, produce

pytestmark = pytest.mark.django_db(transaction=True)


# Nullable: the rows written before hold NULL; not Nullable (a Protobuf string): the type's default, ''.
@pytest.mark.parametrize("column_type", ["Nullable(String)", "String"])
def test_a_fill_sets_each_row_once_from_its_event_and_names_what_retention_dropped(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, column_type
):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    from spark_jobs.sink import TableSpec, create_table_sql
    from webapp.pipelines.column_fill import pipeline_column_fill
    from webapp.pipelines.models import Pipeline

    table = f"fill_{uuid.uuid4().hex[:8]}"
    columns = [*EVENT_COLUMNS, ("coupon", "coupon", column_type)]
    spec = spec_dict(
        topics=[topic],
        fields=[*EVENT_FIELDS, ("coupon", "string")],
        columns=columns,
        database="default",
        table=table,
        create_table=True,
    )
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=spec)
    ch.command(
        create_table_sql(
            TableSpec("default", table, f"{table}_dlq", "MergeTree", ["event_id"], [(c, t) for _, c, t in columns], 100)
        )
    )
    # 20 events on partition 0; every other one carries a coupon. The job wrote one row each, before the column.
    keys = [f"f{i:02d}" for i in range(20)]
    since = (datetime.now(UTC) - timedelta(seconds=5)).isoformat().replace("+00:00", "Z")  # the field's first batch
    produce(kafka_bootstrap, topic, [(0, event(k, n=i, **({"coupon": f"C{i}"} if i % 2 == 0 else {}))) for i, k in
                                     enumerate(keys)])  # fmt: skip
    ch.insert(table, [[k, i] for i, k in enumerate(keys)], column_names=["event_id", "n"])
    # Retention has dropped offsets 0-4 (three of them carried a coupon).
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.delete_records([TopicPartition(topic, 0, 5)])[TopicPartition(topic, 0, 5)].result(30)

    pipeline = Pipeline.objects.get(pk=pk)
    fill = {"path": "coupon", "column": "coupon", "since": since, "start": {topic: {"0": 0}}}
    report = pipeline_column_fill(pipeline=pipeline, **fill)

    assert report.rows_filled == 7 and report.events_read == 15
    assert report.message.startswith("Column `coupon`: 7 rows written before it existed were filled from 15 events")
    assert f"The topic no longer keeps offsets 0 to 4 of {topic} partition 0 (5 events, dropped by retention)" in (
        report.message
    )
    filled = dict(ch.query(f"SELECT event_id, coupon FROM `{table}` WHERE coupon != ''").result_rows)
    assert filled == {f"f{i:02d}": f"C{i}" for i in range(6, 20, 2)}
    assert ch.query(f"SELECT count(), uniqExact(event_id) FROM `{table}`").result_rows[0] == (20, 20)  # none doubled

    again = pipeline_column_fill(pipeline=pipeline, **fill)
    assert again.rows_filled == 0  # a retry finds nothing left to fill and changes nothing
    assert ch.query(f"SELECT count(), countIf(coupon != '') FROM `{table}`").result_rows[0] == (20, 7)
    leftovers = ch.query("SELECT count() FROM system.tables WHERE name LIKE '\\_cf\\_fill\\_%'").result_rows[0][0]
    assert leftovers == 0  # the Join table that carried the values is gone
