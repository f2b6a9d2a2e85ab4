"""Watermark offsets while a partition's leader is being elected (a topic created a moment ago).

A leader election cannot be timed for real from a test, so the consumer here answers as librdkafka does
during one: NOT_LEADER_FOR_PARTITION a few times, then the offsets."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from webapp.connections.kafka_client import watermark_offsets


class ElectingConsumer:
    def __init__(self, failures: int, code: int = KafkaError.NOT_LEADER_FOR_PARTITION) -> None:
        self.failures = failures
        self.code = code
        self.calls = 0

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float, cached: bool) -> tuple[int, int]:
        self.calls += 1
        if self.calls <= self.failures:
            raise KafkaException(KafkaError(self.code))
        return (0, 42)


def test_a_leader_election_is_waited_out():
    consumer = ElectingConsumer(failures=3)
    assert watermark_offsets(consumer, TopicPartition("t", 0), deadline=time.monotonic() + 5) == (0, 42)
    assert consumer.calls == 4


def test_a_leader_election_longer_than_the_deadline_is_reported():
    consumer = ElectingConsumer(failures=10**6)
    with pytest.raises(KafkaException):
        watermark_offsets(consumer, TopicPartition("t", 0), deadline=time.monotonic() + 0.5)


def test_other_errors_are_reported_at_once():
    consumer = ElectingConsumer(failures=1, code=KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        watermark_offsets(consumer, TopicPartition("t", 0), deadline=time.monotonic() + 5)
    assert consumer.calls == 1
