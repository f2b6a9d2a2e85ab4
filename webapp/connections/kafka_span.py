"""A sample of a topic over a time span: its events whose timestamps fall within [start_ms, end_ms].

The wizard's join step reads the joined topic over the time of the first topic's sample, so that events which
join can meet in the preview (the newest events of each, read at different times, often do not). Read as
`kafka_client.sample_events` reads (partitions assigned by hand, nothing committed, bounded by a count and a
deadline, the same reader): each partition from the offset of its first event at or after `start_ms`
(`offsets_for_times`), until its first event past `end_ms` or the end offset it had when the read began.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from clearflow_spec.connections import KafkaConnectionSpec
from webapp.connections.kafka_client import (
    DEFAULT_TIMEOUT,
    MAX_SAMPLE,
    SampledEvent,
    _decode,
    _kafka_error,
    _pick,
    _raise,
    direct_consumer,
    partition_watermarks,
)
from webapp.connections.kafka_errors import ErrorCollector
from webapp.connections.kafka_read import read_partitions


def sample_span(
    settings: KafkaConnectionSpec,
    *,
    topics: Sequence[str],
    start_ms: int,
    end_ms: int,
    count: int = 20,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[SampledEvent]:
    """The first `count` events of `topics` written within [start_ms, end_ms] (Kafka timestamps, ms since the
    epoch), oldest first. A span before, between or after the topic's events answers none, at once. Raises
    KafkaClientError or KafkaTopicNotFoundError as `sample_events` does."""
    from confluent_kafka import KafkaException, TopicPartition

    count = max(1, min(int(count), MAX_SAMPLE))
    # librdkafka reads a negative timestamp as a logical offset (-1: the end, -2: the beginning).
    start_ms = max(0, int(start_ms))
    collector = ErrorCollector()
    deadline = time.monotonic() + timeout
    consumer = direct_consumer(settings, timeout, collector, purpose="sample-span")
    try:
        watermarks = partition_watermarks(consumer, collector, settings, topics, deadline=deadline, timeout=timeout)
        asked = [TopicPartition(name, pid, start_ms) for (name, pid), (low, high) in watermarks.items() if low < high]
        if end_ms < start_ms or not asked:  # librdkafka refuses an empty list (_INVALID_ARG)
            return []
        try:
            found = consumer.offsets_for_times(asked, timeout=max(0.5, deadline - time.monotonic()))
        except KafkaException as exc:
            _raise(_kafka_error(exc), collector, settings, timeout, client=consumer)
        starts: dict[tuple[str, int], int] = {}
        ends: dict[tuple[str, int], int] = {}
        for tp in found:
            low, high = watermarks[(tp.topic, tp.partition)]
            # -1: no event at or after start_ms; at or past `high`: only events written since the read began.
            if tp.error is None and 0 <= tp.offset < high:
                starts[(tp.topic, tp.partition)] = max(low, tp.offset)
                ends[(tp.topic, tp.partition)] = high

        def add(events: list[SampledEvent], message: Any) -> bool:
            kind, millis = message.timestamp()
            if kind != 0 and millis > end_ms:  # past the span: this partition is done
                return True
            events.append(_decode(message))
            return len(events) >= count

        fail = lambda error: _raise(error, collector, settings, timeout)  # noqa: E731
        per_partition = read_partitions(consumer, starts, ends, deadline=deadline, fail=fail, add=add)
        return _pick(per_partition, count=count, position="oldest")
    finally:
        consumer.close()
