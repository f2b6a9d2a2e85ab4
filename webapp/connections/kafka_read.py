"""Reading assigned partitions of a topic between two offsets each, for the web app's bounded reads (the samples of
`kafka_client` and `kafka_span`, the re-read of `kafka_range`): no consumer group, nothing committed, a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from webapp.connections.kafka_client import SampledEvent


def read_partitions(
    consumer: Any,
    starts: dict[tuple[str, int], int],
    ends: dict[tuple[str, int], int],
    *,
    deadline: float,
    fail: Callable[[Any], None],
    add: Callable[[list[SampledEvent], Any], bool],
) -> list[list[SampledEvent]]:
    """Each partition in `starts` read from its start offset up to its end offset (`read_to_ends`), its events in
    one list each. `add` puts one message into its partition's list and answers True once that partition needs no
    more; the read ends when every partition is done or the deadline passes. Nothing when `starts` is empty."""
    from confluent_kafka import TopicPartition

    if not starts:
        return []
    consumer.assign([TopicPartition(topic, partition, offset) for (topic, partition), offset in starts.items()])
    per_partition: dict[tuple[str, int], list[SampledEvent]] = {key: [] for key in starts}
    pending = set(starts)
    for message in read_to_ends(consumer, ends, pending, deadline=deadline, poll_seconds=0.1, fail=fail):
        key = (message.topic(), message.partition())
        if add(per_partition[key], message):
            pending.discard(key)
    return list(per_partition.values())


def read_to_ends(
    consumer: Any,
    ends: dict[tuple[str, int], int],
    pending: set[tuple[str, int]],
    *,
    deadline: float,
    poll_seconds: float,
    fail: Callable[[Any], None],
) -> Iterator[Any]:
    """The assigned partitions' messages below the end offsets seen at the start (`ends`), until every partition in
    `pending` is done (the caller may take one out early) or the deadline passes. A fatal or lasting error goes to
    `fail`, which raises."""
    from confluent_kafka import KafkaError

    while pending and time.monotonic() < deadline:
        message = consumer.poll(timeout=min(poll_seconds, max(0.0, deadline - time.monotonic())))
        if message is None:
            continue
        key = (message.topic(), message.partition())
        if message.error() is not None:
            if message.error().code() == KafkaError._PARTITION_EOF:
                # At the end offset seen at the start (past transaction markers, which are never
                # delivered); an earlier end (an open transaction) waits for the deadline.
                if key in ends and message.offset() >= ends[key]:
                    pending.discard(key)
                continue
            if message.error().fatal() or not message.error().retriable():
                fail(message.error())
            continue
        if key not in pending:
            continue
        if message.offset() >= ends[key] - 1:
            pending.discard(key)
        if message.offset() >= ends[key]:
            continue
        yield message
