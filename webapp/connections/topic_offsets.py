"""Each partition's earliest and end offsets, for the worker's lag reading (`worker.lag`): one ListOffsets request per
broker, with an admin client the worker keeps (it asks every few seconds). No event is read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clearflow_spec.connections import KafkaConnectionSpec
from webapp.connections.kafka_client import (
    DEFAULT_TIMEOUT,
    KafkaClientError,
    KafkaTopicNotFoundError,
    _kafka_error,
    admin_client,
)
from webapp.connections.kafka_errors import ErrorCollector


@dataclass(frozen=True)
class TopicOffsets:
    """Each partition's earliest and end offsets (`{topic: {partition: offset}}`, partitions as text, as Spark's
    offset log spells them)."""

    earliest: dict[str, dict[str, int]]
    end: dict[str, dict[str, int]]


def offsets_client(settings: KafkaConnectionSpec, *, timeout: float = DEFAULT_TIMEOUT) -> Any:
    """An admin client for `topic_offsets`, to keep and reuse (the worker asks every few seconds). Raises
    KafkaSettingsError."""
    return admin_client(settings, timeout, ErrorCollector())


def topic_offsets(
    admin: Any,
    *,
    topics: Sequence[str],
    matching: Callable[[str], bool] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> TopicOffsets:
    """The earliest and end offsets of every partition of `topics`, and of the cluster's topics `matching`
    accepts (a source's topic pattern: `SourceSpec.reads_topic`), in one request per broker (ListOffsets), with
    an admin client from `offsets_client`. Raises KafkaClientError, or KafkaTopicNotFoundError naming the listed
    topics that are not there."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    try:
        metadata = admin.list_topics(timeout=timeout)
        names = list(dict.fromkeys(topics))
        if matching is not None:
            names += sorted(t for t in metadata.topics if not t.startswith("__") and t not in names and matching(t))
        missing = [t for t in names if t not in metadata.topics or metadata.topics[t].error is not None]
        if missing:
            raise KafkaTopicNotFoundError(f"No such topic: {', '.join(missing)}.")
        partitions = [(name, pid) for name in names for pid in sorted(metadata.topics[name].partitions)]
        found: dict[str, dict[str, dict[str, int]]] = {"earliest": {}, "end": {}}
        for which, spec in (("earliest", OffsetSpec.earliest()), ("end", OffsetSpec.latest())):
            futures = admin.list_offsets(
                {TopicPartition(name, pid): spec for name, pid in partitions}, request_timeout=timeout
            )
            for tp, future in futures.items():
                found[which].setdefault(tp.topic, {})[str(tp.partition)] = int(future.result().offset)
    except KafkaException as exc:
        raise KafkaClientError(f"Could not read the topics' offsets: {_kafka_error(exc)}") from None
    return TopicOffsets(earliest=found["earliest"], end=found["end"])
