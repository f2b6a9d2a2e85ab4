"""A row over the row size cap (`clearflow_spec.limits.ROW_BYTES`) once converted goes to dead letters with its reason;
the query goes on and writes the rows around it."""

from __future__ import annotations

import pytest
from engine_helpers import event, make_spec, produce

from clearflow_spec.limits import ROW_BYTES
from clearflow_spec.spec import parse_spec
from spark_jobs.query import start_query, stop_query

pytestmark = pytest.mark.spark


def test_a_row_over_the_cap_is_a_dead_letter_with_its_reason(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic], dedup=None)
    # A computed field five times the email: a 900 kB email (under the broker's 1 MiB record limit) makes a
    # row of 5.4 MB, over the 4 MiB cap; the expression itself is within its caps (5 times its input).
    data["transforms"] = [{"name": "padded", "expression": "repeat(email, 5)", "type": "string"}]
    data["sink"]["columns"] += [
        {"field": "email", "column": "email", "type": "String"},
        {"field": "padded", "column": "padded", "type": "String"},
    ]
    spec = parse_spec(data)
    big = event("big", email="x" * 900_000)
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"processingTime": "200 milliseconds"})
    try:
        produce(kafka_bootstrap, topic, [(0, event("before")), (0, big), (0, event("after"))])
        query.processAllAvailable()
        assert query.isActive and query.exception() is None
    finally:
        stop_query(spark, query)

    written = ch.query(f"SELECT event_id, length(padded) FROM {spec.sink.table} ORDER BY event_id").result_rows
    assert written == [("after", len("after@example.com") * 5), ("before", len("before@example.com") * 5)]
    dead = ch.query(f"SELECT offset, length(raw), reason FROM {spec.sink.table}_dlq").result_rows
    assert len(dead) == 1
    offset, raw_length, reason = dead[0]
    assert offset == 1 and raw_length > 900_000
    assert reason.startswith("row too large: ")
    assert f"at most {ROW_BYTES.maximum:,} (cap: row_bytes)" in reason
    assert int(reason.split()[3]) > ROW_BYTES.maximum


def test_the_cap_counts_text_bytes_and_is_checked_before_dedup_on_the_source_fields(spark):
    from test_dataframe_rules import records

    from spark_jobs import column_mapping, transforms
    from spark_jobs.column_mapping import SinkColumn
    from spark_jobs.transforms import ERROR, Field

    fields = [Field("id", "string"), Field("note", "string"), Field("n", "int")]
    columns = [
        SinkColumn("id", "id", "String"),
        SinkColumn("note", "note", "String"),
        SinkColumn("note", "note_again", "String"),
        SinkColumn("n", "n", "Int64"),
    ]
    field_types = {"id": "string", "note": "string", "n": "int"}
    values = ['{"id": "a", "note": "short", "n": 1}', '{"id": "b", "note": "' + "é" * 30 + '", "n": 2}']
    df = transforms.parse_events(records(spark, values), fields)
    # Row "b": 1 + 60 + 60 bytes of text (é is two bytes in UTF-8) and 16 for the Int64: 137 > 100.
    checked = column_mapping.check_columns(df, columns, field_types, max_row_bytes=100)
    reasons = {row["id"]: row[ERROR] for row in checked.select("id", ERROR).collect()}
    assert reasons == {"a": None, "b": "row too large: 137 bytes after conversion, at most 100 (cap: row_bytes)"}
    mapped = column_mapping.map_columns(df, columns, field_types, max_row_bytes=100).collect()
    assert [(row["id"], row["note"]) for row in mapped] == [("a", "short"), (None, None)]  # no values past the cap
    assert mapped[1]["_cf_dlq_raw"] == values[1]
