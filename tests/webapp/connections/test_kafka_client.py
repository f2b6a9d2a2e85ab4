"""The Kafka client module against the real broker (Apache Kafka)."""

from __future__ import annotations

import time

import pytest

from clearflow_spec.connections import KafkaConnectionSpec
from localstack.processes import free_port
from tests.webapp.conftest import ORDER_COUNT, ORDER_PARTITIONS
from webapp.connections import kafka_client
from webapp.connections.kafka_client import KafkaClientError, KafkaTopicNotFoundError


@pytest.fixture
def settings_(kafka_bootstrap) -> KafkaConnectionSpec:
    return KafkaConnectionSpec(bootstrap_servers=kafka_bootstrap)


def test_check_connection_reports_brokers_and_topics(settings_, kafka_bootstrap, topics):
    info = kafka_client.check_connection(settings_)
    assert info.brokers == [kafka_bootstrap]
    assert info.topic_count >= 3


def test_list_topics_has_partitions_and_counts(settings_, topics):
    listed = {t.name: t for t in kafka_client.list_topics(settings_)}
    assert listed[topics.orders].partitions == ORDER_PARTITIONS
    assert listed[topics.orders].message_count == ORDER_COUNT
    assert listed[topics.empty].message_count == 0
    assert topics.orders in kafka_client.list_topic_names(settings_)


def test_sample_newest_and_oldest(settings_, topics):
    newest = kafka_client.sample_events(settings_, topics=[topics.orders], count=6, position="newest")
    assert sorted(e.value["seq"] for e in newest) == list(range(ORDER_COUNT - 6, ORDER_COUNT))
    oldest = kafka_client.sample_events(settings_, topics=[topics.orders], count=6, position="oldest")
    assert sorted(e.value["seq"] for e in oldest) == list(range(6))
    assert all(e.is_json and e.timestamp is not None and e.topic == topics.orders for e in oldest)


def test_sample_more_than_available_returns_everything(settings_, topics):
    events = kafka_client.sample_events(settings_, topics=[topics.orders], count=100)
    assert sorted(e.value["seq"] for e in events) == list(range(ORDER_COUNT))


def test_sample_empty_topic_is_empty_and_quick(settings_, topics):
    started = time.monotonic()
    assert kafka_client.sample_events(settings_, topics=[topics.empty], count=5) == []
    assert time.monotonic() - started < 3


def test_sample_keeps_non_json_as_text(settings_, topics):
    events = kafka_client.sample_events(settings_, topics=[topics.mixed], count=10, position="oldest")
    assert [(e.is_json, e.value) for e in events] == [
        (True, {"a": 1}),
        (False, "not json"),
        (True, {"a": 2.5, "b": None}),
        (False, '{"a": NaN}'),
        (False, "\ufffd\ufffd"),
    ]


def test_a_topic_named_twice_is_read_once(settings_, topics):
    events = kafka_client.sample_events(settings_, topics=[topics.orders, topics.orders], count=100)
    assert len(events) == 30


def test_unknown_topic(settings_):
    with pytest.raises(KafkaTopicNotFoundError, match="no-such-topic"):
        kafka_client.sample_events(settings_, topics=["no-such-topic"], count=5)


def test_unreachable_broker_fails_in_plain_words_within_the_timeout():
    dead = KafkaConnectionSpec(bootstrap_servers=f"127.0.0.1:{free_port()}")
    started = time.monotonic()
    with pytest.raises(KafkaClientError, match=r"^TCP connection failed: .*connection refused"):
        kafka_client.check_connection(dead, timeout=2)
    with pytest.raises(KafkaClientError, match="connection refused"):
        kafka_client.list_topics(dead, timeout=2)
    with pytest.raises(KafkaClientError):
        kafka_client.sample_events(dead, topics=["x"], timeout=2)
    assert time.monotonic() - started < 12


def test_unresolvable_host_is_named():
    with pytest.raises(KafkaClientError, match=r"^DNS lookup failed: .*could not be resolved"):
        kafka_client.check_connection(KafkaConnectionSpec(bootstrap_servers="no-such-host.invalid:9092"), timeout=2)
