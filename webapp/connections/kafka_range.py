"""Reading a stretch of a topic again: every event between two offsets of each partition, for the web app's work
that needs events already written (filling a column added after them, `webapp.pipelines.column_fill`).

Like `kafka_client.sample_events` it assigns partitions by hand (no consumer group, nothing committed) and is
bounded: by a deadline and by a number of events. It says what it could not read, so the caller can put it in
words: offsets the topic no longer keeps (retention), or a stretch cut short by the deadline or the cap.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from clearflow_spec.connections import KafkaConnectionSpec
from webapp.connections.kafka_client import (
    DEFAULT_TIMEOUT,
    KafkaClientError,
    SampledEvent,
    _decode,
    _kafka_error,
    _raise,
    direct_consumer,
    watermark_offsets,
)
from webapp.connections.kafka_errors import ErrorCollector
from webapp.connections.kafka_read import read_to_ends

Offsets = Mapping[str, Mapping[str, int]]  # topic -> partition (as text, as Spark spells it) -> offset


@dataclass(frozen=True)
class Gone:
    """Offsets [start, earliest) of one partition that were asked for and that the topic no longer keeps."""

    topic: str
    partition: int
    start: int
    earliest: int

    @property
    def events(self) -> int:
        return self.earliest - self.start


@dataclass
class RangeRead:
    events: list[SampledEvent] = field(default_factory=list)
    gone: list[Gone] = field(default_factory=list)  # retention dropped them before they could be read again
    complete: bool = True  # False: the deadline or the cap came before the end of some partition


def read_range(
    settings: KafkaConnectionSpec,
    *,
    topics: list[str],
    start: Offsets | None,
    max_events: int,
    read_seconds: float,
    timeout: float = DEFAULT_TIMEOUT,
) -> RangeRead:
    """The events of `topics` from `start` (per partition; a partition not in it, or `start` None: from the
    oldest event the topic keeps) up to each partition's end offset as it is when the read begins, within
    `read_seconds` in all (`timeout`: for each request to a broker)."""
    from confluent_kafka import KafkaException, TopicPartition

    collector = ErrorCollector()
    deadline = time.monotonic() + read_seconds
    consumer = direct_consumer(settings, timeout, collector, purpose="reread")
    found = RangeRead()
    try:
        try:
            metadata = consumer.list_topics(timeout=timeout)
        except KafkaException as exc:
            _raise(_kafka_error(exc), collector, settings, timeout, client=consumer)
        assignment, ends = [], {}
        for name in topics:
            if name not in metadata.topics or metadata.topics[name].error is not None:
                raise KafkaClientError(f"No such topic: {name}.")
            for partition in sorted(metadata.topics[name].partitions):
                try:
                    asked = TopicPartition(name, partition)
                    low, high = watermark_offsets(consumer, asked, deadline=time.monotonic() + timeout)
                except KafkaException as exc:
                    _raise(_kafka_error(exc), collector, settings, timeout, client=consumer)
                wanted = (start or {}).get(name, {}).get(str(partition))
                first = low if wanted is None else max(int(wanted), low)
                if wanted is not None and int(wanted) < low:
                    found.gone.append(Gone(name, partition, int(wanted), low))
                if first < high:
                    assignment.append(TopicPartition(name, partition, first))
                    ends[(name, partition)] = high
        if not assignment:
            return found
        consumer.assign(assignment)
        pending = set(ends)
        fail = lambda error: _raise(error, collector, settings, timeout)  # noqa: E731
        for message in read_to_ends(consumer, ends, pending, deadline=deadline, poll_seconds=0.2, fail=fail):
            found.events.append(_decode(message))
            if len(found.events) >= max_events:
                break
        found.complete = not pending
        return found
    finally:
        consumer.close()
