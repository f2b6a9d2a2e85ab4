"""Read the most recent events of some topics, a bounded number, within a deadline (for key advice).

`RecentEvents(settings, topics=..., max_events=N, deadline=t).batches()` yields lists of confluent-kafka
messages: at most N in all, spread over every partition of the topics (each partition gets an equal share of
N, and what a short partition cannot use goes to the others), each partition read from `end - share` to the
end it had when the scan began. Records written after that are not read. Nothing is committed (no consumer
group is joined). `planned` says how many events the scan set out to read, `read` how many it did, and
`complete` whether it got to the end before the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from clearflow_spec.connections import KafkaConnectionSpec
from webapp.connections.kafka_client import (
    DEFAULT_TIMEOUT,
    KafkaTopicNotFoundError,
    _kafka_error,
    _raise,
    direct_consumer,
    watermark_offsets,
)
from webapp.connections.kafka_errors import ErrorCollector

CONSUME_BATCH = 2_000


def fair_shares(available: Sequence[int], total: int) -> list[int]:
    """Split `total` over partitions holding `available` events: equal shares, what a partition cannot use
    going to the others (water-filling). The shares add up to min(total, sum(available))."""
    shares = [0] * len(available)
    remaining = max(0, total)
    open_ = [i for i, count in enumerate(available) if count > 0]
    while remaining > 0 and open_:
        each = max(1, remaining // len(open_))
        still_open = []
        for i in open_:
            give = min(each, available[i] - shares[i], remaining)
            shares[i] += give
            remaining -= give
            if shares[i] < available[i]:
                still_open.append(i)
            if remaining == 0:
                break
        open_ = still_open
    return shares


class RecentEvents:
    """One bounded read of the newest `max_events` events of `topics` (see the module's docstring)."""

    def __init__(
        self, settings: KafkaConnectionSpec, *, topics: Sequence[str], max_events: int, deadline: float
    ) -> None:
        self.settings = settings
        self.topics = list(dict.fromkeys(topics))
        self.max_events = max(0, int(max_events))
        self.deadline = deadline
        self.planned = 0
        self.read = 0
        self.complete = False

    def _remaining(self) -> float:
        return self.deadline - time.monotonic()

    def batches(self) -> Iterator[list[Any]]:

        timeout = max(1.0, min(DEFAULT_TIMEOUT, self._remaining()))
        collector = ErrorCollector()
        consumer = direct_consumer(self.settings, timeout, collector, purpose="dedup-advisor")
        try:
            ends = self._assign(consumer, collector, timeout)
            if not ends:
                self.complete = True
                return
            yield from self._consume(consumer, collector, timeout, ends)
        finally:
            consumer.close()

    def _assign(self, consumer: Any, collector: ErrorCollector, timeout: float) -> dict[tuple[str, int], int]:
        """Assign every partition at `end - share`; the end offset of each assigned partition."""
        from confluent_kafka import KafkaException, TopicPartition

        try:
            metadata = consumer.list_topics(timeout=timeout)
        except KafkaException as exc:
            _raise(_kafka_error(exc), collector, self.settings, timeout, client=consumer)
        missing = [t for t in self.topics if t not in metadata.topics or metadata.topics[t].error is not None]
        if missing:
            raise KafkaTopicNotFoundError(f"No such topic: {', '.join(missing)}.")
        partitions = [(name, pid) for name in self.topics for pid in sorted(metadata.topics[name].partitions)]
        ranges: list[tuple[int, int]] = []
        for name, pid in partitions:
            # At least a second per answer, even when the budget is spent: an answer beats an error.
            try:
                wait = min(timeout, max(1.0, self._remaining()))
                low, high = watermark_offsets(consumer, TopicPartition(name, pid), deadline=time.monotonic() + wait)
            except KafkaException as exc:
                _raise(_kafka_error(exc), collector, self.settings, timeout, client=consumer)
            ranges.append((max(0, low), max(0, high)))
        shares = fair_shares([high - low for low, high in ranges], self.max_events)
        self.planned = sum(shares)
        assignment = []
        ends: dict[tuple[str, int], int] = {}
        for (name, pid), (_low, high), share in zip(partitions, ranges, shares, strict=True):
            if share > 0:
                assignment.append(TopicPartition(name, pid, high - share))
                ends[(name, pid)] = high
        if assignment:
            consumer.assign(assignment)
        return ends

    def _consume(
        self, consumer: Any, collector: ErrorCollector, timeout: float, ends: dict[tuple[str, int], int]
    ) -> Iterator[list[Any]]:
        from confluent_kafka import KafkaError

        pending = set(ends)
        while pending:
            remaining = self._remaining()
            if remaining <= 0:
                return  # the time budget is spent: what was read is what there is
            messages = consumer.consume(num_messages=CONSUME_BATCH, timeout=min(0.2, remaining))
            batch = []
            for message in messages:
                key = (message.topic(), message.partition())
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(key)
                    elif error.fatal() or not error.retriable():
                        _raise(error, collector, self.settings, timeout)
                    continue
                if key not in pending:
                    continue
                offset = message.offset()
                if offset >= ends[key]:  # written after the scan began
                    pending.discard(key)
                    continue
                batch.append(message)
                if offset >= ends[key] - 1:
                    pending.discard(key)
            if batch:
                self.read += len(batch)
                yield batch
        self.complete = True
