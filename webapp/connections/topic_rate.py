"""A topic's recent rate in events per second, from its offsets: no event is read.

`topic_rate(settings, topics=...)` asks every partition for its end offset and for the offsets of the first
events written 1 and 5 minutes ago (`offsets_for_times`), and answers the larger of the two rates: a burst in
the last minute counts, a pause in it does not hide the five minutes before. The dedup state is sized from it
(`clearflow_spec.sizing`) when the key advice did not measure one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clearflow_spec.connections import KafkaConnectionSpec
from clearflow_spec.spec_base import SourceSpec
from webapp.connections.kafka_client import (
    DEFAULT_TIMEOUT,
    KafkaTopicNotFoundError,
    _kafka_error,
    _raise,
    direct_consumer,
    source_topics,
    watermark_offsets,
)
from webapp.connections.kafka_errors import ErrorCollector
from webapp.core.exceptions import ApplicationError

if TYPE_CHECKING:
    from webapp.connections.models import KafkaConnection

log = logging.getLogger(__name__)

SPANS_SECONDS = (60, 300)
# Asking the topic for its rate is a few offset look-ups: a slow broker must not hold a page or a job's start.
RECENT_RATE_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class TopicRate:
    events_per_second: float
    per_span: dict[int, float]  # seconds back -> events per second over that span


def topic_rate(
    settings: KafkaConnectionSpec, *, topics: Sequence[str], timeout: float = DEFAULT_TIMEOUT, now_ms: int | None = None
) -> TopicRate:
    """The events per second written to `topics` lately (see the module's docstring). Raises KafkaClientError
    or KafkaTopicNotFoundError."""
    from confluent_kafka import KafkaException, TopicPartition

    deadline = time.monotonic() + timeout
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    collector = ErrorCollector()
    consumer = direct_consumer(settings, timeout, collector, purpose="topic-rate")
    try:
        try:
            metadata = consumer.list_topics(timeout=timeout)
        except KafkaException as exc:
            _raise(_kafka_error(exc), collector, settings, timeout, client=consumer)
        names = list(dict.fromkeys(topics))
        missing = [t for t in names if t not in metadata.topics or metadata.topics[t].error is not None]
        if missing:
            raise KafkaTopicNotFoundError(f"No such topic: {', '.join(missing)}.")
        partitions = [(name, pid) for name in names for pid in sorted(metadata.topics[name].partitions)]
        try:
            ends = {p: watermark_offsets(consumer, TopicPartition(*p), deadline=deadline)[1] for p in partitions}
            per_span: dict[int, float] = {}
            for span in SPANS_SECONDS:
                asked = [TopicPartition(name, pid, now - span * 1000) for name, pid in partitions]
                found = consumer.offsets_for_times(asked, timeout=max(0.5, deadline - time.monotonic()))
                # -1: nothing written since then, so the span's events start at the end.
                written = sum(
                    ends[(tp.topic, tp.partition)] - (tp.offset if tp.offset >= 0 else ends[(tp.topic, tp.partition)])
                    for tp in found
                )
                per_span[span] = max(0, written) / span
        except KafkaException as exc:
            _raise(_kafka_error(exc), collector, settings, timeout, client=consumer)
    finally:
        consumer.close()
    return TopicRate(events_per_second=max(per_span.values(), default=0.0), per_span=per_span)


def topics_now(source: SourceSpec, kafka_connection: KafkaConnection | None) -> list[str]:
    """The topics a source reads now (a pattern's: those on the cluster it matches); [] when they cannot be
    asked, so the sizing goes on without their rate."""
    if source.topic_pattern is None or kafka_connection is None:
        return list(source.topics)
    try:
        return source_topics(kafka_connection.client_settings(), source, timeout=RECENT_RATE_TIMEOUT_SECONDS)
    except ApplicationError as exc:
        log.info("topics of pattern %r unavailable: %s", source.topic_pattern, exc)
        return []


def recent_rate(*, topics: list[str], kafka_connection: KafkaConnection | None) -> float | None:
    """The topics' recent events per second, or None when it cannot be asked (no connection, unreachable)."""
    if kafka_connection is None or not topics:
        return None
    try:
        return topic_rate(
            kafka_connection.client_settings(), topics=topics, timeout=RECENT_RATE_TIMEOUT_SECONDS
        ).events_per_second
    except ApplicationError as exc:
        log.info("topic rate unavailable for %s: %s", topics, exc)
        return None
