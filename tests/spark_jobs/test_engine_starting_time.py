"""`source.starting_offsets` as a point in time: the spec's rules, and a first start that reads only the records
at or after the time, against the real broker and ClickHouse."""

from __future__ import annotations

import time

import pytest
from engine_helpers import event, make_spec, produce

from clearflow_spec.spec import SpecError, parse_spec
from spark_jobs.query import start_query, stop_query
from spark_jobs.source import starting_options


class _Address:
    host, port = "127.0.0.1", 8123


def _source(starting_offsets: object):
    data = make_spec(kafka_bootstrap="127.0.0.1:9092", clickhouse=_Address(), topics=["orders"])
    data["source"]["starting_offsets"] = starting_offsets
    return parse_spec(data).source


@pytest.mark.fast
@pytest.mark.parametrize(
    ("given", "millis"),
    [
        ("2026-12-01T00:00:00Z", 1796083200000),
        ("2026-12-01T01:00:00+01:00", 1796083200000),
        ("2026-12-01T00:00:00", 1796083200000),  # no offset: UTC
        ("1796083200000", 1796083200000),
        (1796083200000, 1796083200000),
    ],
)
def test_a_time_is_iso_8601_or_unix_milliseconds(given, millis):
    source = _source(given)
    assert source.starting_timestamp_ms == millis
    assert starting_options(source) == {
        "startingTimestamp": str(millis),
        "startingOffsetsByTimestampStrategy": "latest",
    }


@pytest.mark.fast
def test_earliest_and_latest_are_offsets():
    assert starting_options(_source("latest")) == {"startingOffsets": "latest"}
    assert _source("earliest").starting_timestamp_ms is None


@pytest.mark.fast
@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            "yesterday",
            "source.starting_offsets: invalid starting_offsets 'yesterday': use earliest, latest, or a time: "
            "ISO 8601 ('2026-12-01T00:00:00Z') or unix milliseconds",
        ),
        (
            "1796083200",
            "source.starting_offsets: starting_offsets 1796083200 reads as milliseconds before 1973: "
            "give unix milliseconds (seconds x 1000)",
        ),
    ],
)
def test_a_time_that_is_not_one_is_refused_in_words(given, message):
    with pytest.raises(SpecError) as caught:
        _source(given)
    assert [str(issue) for issue in caught.value.errors] == [message]


@pytest.mark.spark
def test_a_first_start_from_a_time_writes_the_events_at_or_after_it(
    spark, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(2)
    now_ms = int(time.time() * 1000)
    start_ms = now_ms - 3_600_000
    produce(kafka_bootstrap, topic, [(p, event(f"old-{p}")) for p in (0, 1)], timestamp_ms=start_ms - 60_000)
    produce(kafka_bootstrap, topic, [(0, event("at"))], timestamp_ms=start_ms)
    produce(kafka_bootstrap, topic, [(p, event(f"new-{p}")) for p in (0, 1)], timestamp_ms=now_ms)
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic])
    data["source"]["starting_offsets"] = str(start_ms)
    spec = parse_spec(data)
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"availableNow": True})
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)
    rows = ch.query(f"SELECT event_id FROM {spec.sink.table} ORDER BY event_id").result_rows
    assert rows == [("at",), ("new-0",), ("new-1",)]
