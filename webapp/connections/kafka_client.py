"""Kafka access for the wizard and the API: test a connection, list topics, sample events.

The web app's calls to a Kafka cluster (confluent-kafka's AdminClient and Consumer); a topic's recent rate and its
offsets, read from offsets alone, are `webapp.connections.topic_rate` and `webapp.connections.topic_offsets`.
Every call is bounded by a timeout of a few seconds and turns librdkafka's errors into one plain-words
`KafkaClientError`. A GSSAPI connection is read through `webapp.connections.kafka_gssapi` (kafka-python with
MIT Kerberos), whose client answers the same calls. Clients are created per call and closed before returning
(but the one `topic_offsets.offsets_client` makes for the worker, which reads every pipeline's offsets every few
seconds and keeps it); none at import time.
Every function takes the spec's connection model (`KafkaConnectionSpec`, from `connection.client_settings()`
or built directly, as the health check does); `librdkafka_config` turns it into the client's settings.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from clearflow_spec.client_config import librdkafka_config
from clearflow_spec.connections import KafkaConnectionSpec
from clearflow_spec.spec_base import SourceSpec
from webapp.connections.kafka_errors import ErrorCollector, explain, plain_words, wait_for_metadata
from webapp.connections.kafka_gssapi import gssapi_consumer
from webapp.connections.kafka_read import read_partitions
from webapp.core.exceptions import ExternalServiceError, NotFoundError

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 5.0
MAX_SAMPLE = 500


class KafkaClientError(ExternalServiceError):
    """The cluster could not be reached or refused the request; `message` says why in plain words."""

    code = "kafka_error"


class KafkaSettingsError(KafkaClientError):
    """The connection settings cannot be used at all (e.g. a certificate that is not PEM): the client's fault."""

    status_code = 400
    code = "invalid_kafka_settings"


def _settings_error(exc: Exception) -> KafkaSettingsError:
    error = exc.args[0] if exc.args else exc
    text = error.str() if hasattr(error, "str") else str(error)
    return KafkaSettingsError(f"The connection settings are not usable: {text}")


class KafkaTopicNotFoundError(NotFoundError):
    """A topic asked for does not exist on the cluster."""


@dataclass(frozen=True)
class KafkaClusterInfo:
    brokers: list[str]
    topic_count: int
    cluster_id: str | None = None


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int
    # high watermark - low watermark summed over partitions: an estimate (compaction and transaction markers
    # make it approximate).
    message_count: int | None


@dataclass(frozen=True)
class SampledEvent:
    topic: str
    partition: int
    offset: int
    timestamp: datetime | None
    key: str | None
    value: Any  # the parsed JSON value, or the text itself when `is_json` is False
    is_json: bool
    size: int
    raw: bytes = field(default=b"", repr=False, compare=False)  # the value's bytes (decoded again for Avro)
    # Avro in the Confluent wire format (`registry_client.decode_events`): the writer schema id, and why the
    # value could not be decoded (None when it was).
    schema_id: int | None = None
    decode_error: str | None = None


# -- errors in plain words ------------------------------------------------------------------------------


def _client_config(settings: KafkaConnectionSpec, timeout: float, collector: ErrorCollector) -> dict[str, Any]:
    timeout_ms = max(1000, int(timeout * 1000))
    try:
        config = librdkafka_config(settings)
    except ValueError as exc:  # a mechanism this librdkafka lacks (GSSAPI): said in words
        raise KafkaSettingsError(str(exc)) from None
    return {
        **config,
        "client.id": "clearflow-webapp",
        "socket.timeout.ms": timeout_ms,
        "socket.connection.setup.timeout.ms": timeout_ms,
        "reconnect.backoff.max.ms": 1000,
        "error_cb": collector,
        # librdkafka would otherwise print every connection failure to stderr.
        "logger": collector.logger,
        "log_level": 3,
    }


def _raise(
    error: Any, collector: ErrorCollector, settings: KafkaConnectionSpec, timeout: float, client: Any = None
) -> None:
    error = explain(error, collector, client=client)
    message = plain_words(error, servers=settings.bootstrap_servers, mechanism=settings.sasl_mechanism, timeout=timeout)
    raise KafkaClientError(message) from None


def _kafka_error(exc: Exception) -> Any:
    return exc.args[0] if exc.args else exc


def _uses_gssapi(settings: KafkaConnectionSpec) -> bool:
    return settings.uses_sasl and settings.sasl_mechanism == "GSSAPI"


def admin_client(settings: KafkaConnectionSpec, timeout: float, collector: ErrorCollector) -> Any:
    """confluent-kafka's AdminClient for `settings`, to keep (the worker's `topic_offsets.offsets_client`); a
    GSSAPI connection raises KafkaSettingsError in words (its librdkafka has no GSSAPI)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        return AdminClient(_client_config(settings, timeout, collector))
    except (ValueError, TypeError, KafkaException) as exc:  # bad configuration, e.g. an unreadable PEM
        raise _settings_error(exc) from None


@contextlib.contextmanager
def _admin(settings: KafkaConnectionSpec, timeout: float, collector: ErrorCollector) -> Iterator[Any]:
    """An admin client for one call; for GSSAPI, the Kerberos client (the metadata and offsets an admin client
    answers), closed after the call."""
    if not _uses_gssapi(settings):
        yield admin_client(settings, timeout, collector)
        return
    consumer = gssapi_consumer(settings, timeout)
    try:
        yield consumer
    finally:
        consumer.close()


# -- operations -----------------------------------------------------------------------------------------


def check_connection(settings: KafkaConnectionSpec, *, timeout: float = DEFAULT_TIMEOUT) -> KafkaClusterInfo:
    """Ask the cluster for its metadata: the brokers and how many topics it has (internal ones left out)."""
    from confluent_kafka import KafkaException

    collector = ErrorCollector()
    with _admin(settings, timeout, collector) as admin:
        try:
            metadata = wait_for_metadata(admin, collector, timeout)
        except KafkaException as exc:
            _raise(_kafka_error(exc), collector, settings, timeout, client=admin)
        brokers = sorted(f"{b.host}:{b.port}" for b in metadata.brokers.values())
        topics = [name for name in metadata.topics if not name.startswith("__")]
        return KafkaClusterInfo(brokers=brokers, topic_count=len(topics), cluster_id=metadata.cluster_id)


def list_topic_names(settings: KafkaConnectionSpec, *, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """Names of the (non-internal) topics, sorted; metadata only, no offsets."""
    from confluent_kafka import KafkaException

    collector = ErrorCollector()
    with _admin(settings, timeout, collector) as admin:
        try:
            metadata = wait_for_metadata(admin, collector, timeout)
        except KafkaException as exc:
            _raise(_kafka_error(exc), collector, settings, timeout, client=admin)
        return sorted(name for name in metadata.topics if not name.startswith("__"))


def source_topics(settings: KafkaConnectionSpec, source: SourceSpec, *, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """The topics a source reads now: the listed ones, or the cluster's topics its pattern matches (one metadata
    request). Raises KafkaClientError when the cluster cannot be asked."""
    if source.topic_pattern is None:
        return list(source.topics)
    return source.topics_read(list_topic_names(settings, timeout=timeout))


def list_topics(settings: KafkaConnectionSpec, *, timeout: float = DEFAULT_TIMEOUT) -> list[TopicInfo]:
    """Every (non-internal) topic with its partition count and an estimated message count, sorted by name.

    The offsets of all partitions are asked for in two batched requests (earliest, latest); when the
    cluster does not answer them in time the counts are None rather than the whole list failing.
    """
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    collector = ErrorCollector()
    deadline = time.monotonic() + timeout
    with _admin(settings, timeout, collector) as admin:
        try:
            metadata = wait_for_metadata(admin, collector, timeout)
        except KafkaException as exc:
            _raise(_kafka_error(exc), collector, settings, timeout, client=admin)
        names = sorted(name for name in metadata.topics if not name.startswith("__"))
        partitions = [TopicPartition(name, pid) for name in names for pid in sorted(metadata.topics[name].partitions)]
        counts: dict[str, int | None] = dict.fromkeys(names, 0)
        if partitions:
            try:
                remaining = max(0.5, deadline - time.monotonic())
                earliest = admin.list_offsets(
                    {tp: OffsetSpec.earliest() for tp in partitions}, request_timeout=remaining
                )
                latest = admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions}, request_timeout=remaining)
                for tp in partitions:
                    remaining = max(0.1, deadline - time.monotonic())
                    low = earliest[tp].result(timeout=remaining).offset
                    high = latest[tp].result(timeout=remaining).offset
                    if counts[tp.topic] is not None:
                        counts[tp.topic] = counts[tp.topic] + max(0, high - low)
            except (KafkaException, TimeoutError, ValueError) as exc:
                logger.info("message counts unavailable: %s", exc)
                counts = dict.fromkeys(names)
        return [
            TopicInfo(name=name, partitions=len(metadata.topics[name].partitions), message_count=counts[name])
            for name in names
        ]


def topic_retention_ms(
    settings: KafkaConnectionSpec, topics: Iterable[str], *, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, int | None]:
    """Each topic's `retention.ms` from its config (-1: no time limit); None where the cluster did not say."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource, ResourceType

    names = sorted(set(topics))
    if not names:
        return {}
    found: dict[str, int | None] = dict.fromkeys(names)
    if _uses_gssapi(settings):  # the Kerberos client reads topics, not their configs
        return found
    collector = ErrorCollector()
    with _admin(settings, timeout, collector) as admin:
        futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, name) for name in names])
        for resource, future in futures.items():
            try:
                entry = future.result(timeout=timeout).get("retention.ms")
            except (KafkaException, TimeoutError) as exc:
                logger.info("retention of topic %s unavailable: %s", resource.name, exc)
                continue
            if entry is not None and entry.value is not None:
                found[resource.name] = int(entry.value)
        return found


def direct_consumer(settings: KafkaConnectionSpec, timeout: float, collector: ErrorCollector, *, purpose: str) -> Any:
    """A consumer for partitions assigned by hand: a throwaway group id, nothing committed, end of partition
    reported (so a reader knows when it has seen everything). Unusable settings raise KafkaSettingsError."""
    from confluent_kafka import Consumer, KafkaException

    if _uses_gssapi(settings):
        return gssapi_consumer(settings, timeout)
    try:
        return Consumer(
            {
                **_client_config(settings, timeout, collector),
                "group.id": f"clearflow-{purpose}-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
                "fetch.wait.max.ms": 100,
            }
        )
    except (ValueError, TypeError, KafkaException) as exc:
        raise _settings_error(exc) from None


# A partition whose leader is being elected (a topic created a moment ago, a broker restarting) answers these;
# they pass within a second or two, so they are waited out within the caller's deadline, never reported.
_LEADER_PENDING = ("NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PART")


def watermark_offsets(consumer: Any, partition: Any, *, deadline: float) -> tuple[int, int]:
    """(low, high) offsets of one partition, asked of its leader; a leader election under way is waited out
    until `deadline` (time.monotonic()); any other error, or the deadline, raises KafkaException."""
    from confluent_kafka import KafkaError, KafkaException

    pending = {getattr(KafkaError, name) for name in _LEADER_PENDING if hasattr(KafkaError, name)}
    while True:
        remaining = max(0.05, deadline - time.monotonic())
        try:
            return consumer.get_watermark_offsets(partition, timeout=remaining, cached=False)
        except KafkaException as exc:
            error = _kafka_error(exc)
            code = error.code() if hasattr(error, "code") else None
            if code not in pending or time.monotonic() + 0.2 >= deadline:
                raise
            time.sleep(0.2)


def partition_watermarks(
    consumer: Any,
    collector: ErrorCollector,
    settings: KafkaConnectionSpec,
    topics: Sequence[str],
    *,
    deadline: float,
    timeout: float,
) -> dict[tuple[str, int], tuple[int, int]]:
    """(low, high) offsets of each partition of `topics`, in order; KafkaTopicNotFoundError names the topics the
    cluster lacks, KafkaClientError says it did not answer by `deadline` (time.monotonic())."""
    from confluent_kafka import KafkaException, TopicPartition

    names = list(dict.fromkeys(topics))
    try:
        metadata = wait_for_metadata(consumer, collector, timeout)
    except KafkaException as exc:
        _raise(_kafka_error(exc), collector, settings, timeout, client=consumer)
    missing = [t for t in names if t not in metadata.topics or metadata.topics[t].error is not None]
    if missing:
        raise KafkaTopicNotFoundError(f"No such topic: {', '.join(missing)}.")
    found: dict[tuple[str, int], tuple[int, int]] = {}
    for name in names:
        for partition in sorted(metadata.topics[name].partitions):
            if deadline - time.monotonic() <= 0.05:
                raise KafkaClientError(f"The broker did not answer within {timeout:g} seconds.")
            try:
                asked = TopicPartition(name, partition)
                found[(name, partition)] = watermark_offsets(consumer, asked, deadline=deadline)
            except KafkaException as exc:
                _raise(_kafka_error(exc), collector, settings, timeout, client=consumer)
    return found


def sample_events(
    settings: KafkaConnectionSpec,
    *,
    topics: Sequence[str],
    count: int = 20,
    position: Literal["newest", "oldest"] = "newest",
    timeout: float = DEFAULT_TIMEOUT,
) -> list[SampledEvent]:
    """Up to `count` events from `topics`: the newest or the oldest, ordered by timestamp (oldest first).

    Reads without joining a consumer group (partitions are assigned directly, nothing is committed).
    Each partition is read up to its high watermark as it was when sampling began (records written
    meanwhile are left for the next sample); stops there, or when `timeout` seconds have passed. An empty
    topic answers an empty list.
    """
    count = max(1, min(int(count), MAX_SAMPLE))
    collector = ErrorCollector()
    deadline = time.monotonic() + timeout
    consumer = direct_consumer(settings, timeout, collector, purpose="sample")
    try:
        starts: dict[tuple[str, int], int] = {}
        ends: dict[tuple[str, int], int] = {}
        watermarks = partition_watermarks(consumer, collector, settings, topics, deadline=deadline, timeout=timeout)
        for key, (low, high) in watermarks.items():
            start = low if position == "oldest" else max(low, high - count)
            if start < high:
                starts[key], ends[key] = start, high

        def add(events: list[SampledEvent], message: Any) -> bool:
            events.append(_decode(message))
            if position == "newest" and len(events) > count:
                del events[0]
            return position == "oldest" and len(events) >= count  # done with `count` events when reading the oldest

        fail = lambda error: _raise(error, collector, settings, timeout)  # noqa: E731
        per_partition = read_partitions(consumer, starts, ends, deadline=deadline, fail=fail, add=add)
        return _pick(per_partition, count=count, position=position)
    finally:
        consumer.close()


def _pick(groups: Iterable[list[SampledEvent]], *, count: int, position: str) -> list[SampledEvent]:
    events = [event for group in groups for event in (group[:count] if position == "oldest" else group[-count:])]
    far_past = datetime.min.replace(tzinfo=UTC)
    events.sort(key=lambda e: (e.timestamp or far_past, e.topic, e.partition, e.offset))
    return events[:count] if position == "oldest" else events[-count:]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _decode(message: Any) -> SampledEvent:
    raw: bytes = message.value() or b""
    text = raw.decode("utf-8", errors="replace")
    try:
        # NaN and Infinity are not JSON (RFC 8259): such a record is shown as text.
        value: Any = json.loads(text, parse_constant=_reject_constant)
        is_json = True
    except (ValueError, RecursionError):
        value, is_json = text, False
    key_bytes = message.key()
    kind, millis = message.timestamp()
    timestamp = datetime.fromtimestamp(millis / 1000, tz=UTC) if kind != 0 and millis >= 0 else None
    return SampledEvent(
        topic=message.topic(),
        partition=message.partition(),
        offset=message.offset(),
        timestamp=timestamp,
        key=key_bytes.decode("utf-8", errors="replace") if key_bytes is not None else None,
        value=value,
        is_json=is_json,
        size=len(raw),
        raw=raw,
    )


@dataclass(frozen=True)
class ProduceReport:
    delivered: list[int]  # indexes (into the messages given) the broker acknowledged
    failed: int
    first_error: str | None


def produce_values(
    settings: KafkaConnectionSpec, messages: Sequence[tuple[str, bytes]], *, timeout: float = 30.0
) -> ProduceReport:
    """Write `(topic, value)` pairs with an idempotent producer (acks=all) and wait up to `timeout` seconds for
    the broker's acknowledgements; what was not acknowledged by then counts as failed (never retried blindly).
    """
    from confluent_kafka import KafkaException, Producer

    collector = ErrorCollector()
    timeout_ms = max(1000, int(timeout * 1000))
    try:
        producer = Producer(
            {
                **_client_config(settings, min(timeout, DEFAULT_TIMEOUT), collector),
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": timeout_ms,
            }
        )
    except (ValueError, TypeError, KafkaException) as exc:
        raise _settings_error(exc) from None
    if messages:
        try:  # an unreachable cluster is told in seconds, not after the whole delivery timeout
            producer.list_topics(timeout=min(timeout, DEFAULT_TIMEOUT))
        except KafkaException as exc:
            _raise(_kafka_error(exc), collector, settings, timeout, client=producer)
    delivered: list[int] = []
    errors: list[Any] = []

    def report(index: int) -> Any:
        def on_delivery(error: Any, _message: Any) -> None:
            if error is None:
                delivered.append(index)
            else:
                errors.append(error)

        return on_delivery

    for index, (topic, value) in enumerate(messages):
        while True:
            try:
                producer.produce(topic, value=value, on_delivery=report(index))
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
            except KafkaException as exc:
                errors.append(_kafka_error(exc))
                break
        producer.poll(0)
    producer.flush(timeout)
    failed = len(messages) - len(delivered)
    first_error = None
    if failed:
        error = errors[0] if errors else collector.best()
        first_error = (
            plain_words(error, servers=settings.bootstrap_servers, mechanism=settings.sasl_mechanism, timeout=timeout)
            if error is not None
            else f"The broker did not acknowledge within {timeout:g} seconds."
        )
    return ProduceReport(delivered=sorted(delivered), failed=failed, first_error=first_error)
