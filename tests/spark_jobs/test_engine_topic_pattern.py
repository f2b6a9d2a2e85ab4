"""`source.topic_pattern`: the spec's rules, and a pipeline that reads every topic matching a pattern, including a
topic created while it runs, exactly once across a restart, against the real broker and ClickHouse."""

from __future__ import annotations

import uuid

import pytest
from engine_helpers import event, make_spec, produce, wait_for

from clearflow_spec.spec import SpecError, parse_spec
from spark_jobs.query import start_query, stop_query
from spark_jobs.source import TOPIC_DISCOVERY_MS, subscription_options


class _Address:
    host, port = "127.0.0.1", 8123


def _spec_data(**source: object) -> dict:
    data = make_spec(kafka_bootstrap="127.0.0.1:9092", clickhouse=_Address(), topics=["orders"])
    data["source"].pop("topics")
    data["source"].update(source)
    return data


@pytest.mark.fast
def test_a_pattern_reads_the_topics_whose_whole_name_matches():
    source = parse_spec(_spec_data(topic_pattern=r"orders\..*")).source
    assert source.topics == []
    assert source.topics_read(["orders.us", "orders.eu", "orders-eu", "old.orders.eu", "orders"]) == [
        "orders.eu",
        "orders.us",
    ]
    assert subscription_options(source) == {
        "subscribePattern": r"orders\..*",
        "kafka.metadata.max.age.ms": str(TOPIC_DISCOVERY_MS),
    }
    listed = parse_spec(_spec_data(topics=["orders.eu"])).source
    assert listed.topics_read(["orders.us"]) == ["orders.eu"]
    assert subscription_options(listed) == {"subscribe": "orders.eu"}


@pytest.mark.fast
@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({}, "source: give topics (a list of names) or topic_pattern (a regular expression)"),
        ({"topics": ["orders.eu"], "topic_pattern": "orders"}, "source: give topics or topic_pattern, not both"),
        (
            {"topic_pattern": "orders.(eu"},
            "source.topic_pattern: topic_pattern 'orders.(eu' is not a regular expression: "
            "missing ), unterminated subpattern at position 7",
        ),
        (
            {"topic_pattern": " "},
            r"source.topic_pattern: topic_pattern is empty: give a regular expression such as 'orders\..*', "
            "or list topics",
        ),
        (
            {"topic_pattern": "(a+)+-events"},
            "source.topic_pattern: topic_pattern: the pattern '(a+)+-events' repeats a part that itself repeats "
            "(like '(a+)+'): Java's regex engine can take exponential time on it. Remove the inner or the outer "
            "repetition, or make the inner one possessive ('a++')",
        ),
    ],
)
def test_topics_or_a_pattern_is_refused_in_words(source, message):
    with pytest.raises(SpecError) as caught:
        parse_spec(_spec_data(**source))
    assert [str(issue) for issue in caught.value.errors] == [message]


@pytest.mark.fast
def test_a_joined_side_lists_its_topics():
    data = _spec_data(topics=["orders"])
    right = {**data["source"], "topics": [], "topic_pattern": "payments.*"}
    data["join"] = {"source": right, "keys": [{"left": "event_id", "right": "event_id"}]}
    with pytest.raises(SpecError) as caught:
        parse_spec(data)
    assert "a join's right side lists its topics: topic_pattern is for the pipeline's source" in str(caught.value)


@pytest.mark.spark
def test_a_pattern_reads_a_topic_created_while_it_runs_exactly_once(
    spark, kafka_bootstrap, kafka_admin, clickhouse_server, ch, tmp_path
):
    from confluent_kafka.admin import NewTopic

    from webapp.connections.topic_offsets import offsets_client, topic_offsets

    def create(name: str) -> str:
        kafka_admin.create_topics([NewTopic(name, 2, 1)])[name].result(timeout=30)
        return name

    prefix = f"tp{uuid.uuid4().hex[:8]}"
    eu, us, unmatched = create(f"{prefix}.eu"), f"{prefix}.us", create(f"{prefix}-eu")
    produce(kafka_bootstrap, eu, [(0, event("a")), (1, event("b")), (0, event("a"))])
    produce(kafka_bootstrap, unmatched, [(0, event("not-read"))])
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[eu])
    data["source"].pop("topics")
    data["source"]["topic_pattern"] = rf"{prefix}\..*"
    spec = parse_spec(data)
    table = spec.sink.table

    def rows() -> list[tuple]:
        return ch.query(f"SELECT event_id, topic FROM {table} ORDER BY event_id").result_rows

    checkpoint = str(tmp_path / "ckpt")
    query = start_query(spark, spec, checkpoint=checkpoint, trigger={"processingTime": "1 second"})
    try:
        wait_for(lambda: len(rows()) >= 2, timeout=120)
        create(us)
        # One new event, and one the first topic had: the dedup keys across every topic the pattern reads.
        produce(kafka_bootstrap, us, [(0, event("c")), (1, event("b"))])
        wait_for(lambda: len(rows()) >= 3, timeout=TOPIC_DISCOVERY_MS / 1000 + 60)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)
    assert rows() == [("a", eu), ("b", eu), ("c", us)]

    # The lag is read from the topics the pattern matches now.
    offsets = topic_offsets(offsets_client(spec.source.kafka), topics=[], matching=spec.source.reads_topic)
    assert sorted(offsets.end) == [eu, us]

    # From its checkpoint it goes on where it stopped: nothing written again, the new event once.
    produce(kafka_bootstrap, us, [(1, event("d")), (0, event("c"))])
    query = start_query(spark, spec, checkpoint=checkpoint, trigger={"availableNow": True})
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)
    assert rows() == [("a", eu), ("b", eu), ("c", us), ("d", us)]
