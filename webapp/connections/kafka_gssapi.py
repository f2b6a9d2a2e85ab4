"""The web app's Kafka reads over Kerberos (GSSAPI): kafka-python with MIT Kerberos (the `gssapi` package), behind
the part of confluent-kafka's Consumer and AdminClient that `kafka_client` and the reads built on it use
(`list_topics`, `get_watermark_offsets`, `list_offsets`, `offsets_for_times`, `assign`, `poll`, `consume`,
`close`), so that no caller
branches on the mechanism. confluent-kafka's wheel bundles a librdkafka without Cyrus SASL (GSSAPI), hence this
second client, for this mechanism only.

MIT Kerberos reads its settings from the process's environment (`clearflow_spec.kafka_sasl.mit_kerberos_environment`:
the connection's krb5.conf, written as the job writes it, and a credential cache of its own). `kerberos_session`
asks the KDC for a ticket with the keytab (the step that names the KDC when it fails) and keeps that environment
for the client's lifetime, one Kerberos client at a time per process. Before that, DNS and TCP are tried on the
first bootstrap server, so each failure names its step.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from clearflow_spec.connections import KafkaConnectionSpec
from clearflow_spec.kafka_sasl import DEFAULT_SERVICE_NAME, mit_kerberos_environment

_PARTITION_EOF = -191  # confluent_kafka.KafkaError._PARTITION_EOF, which read_to_ends looks for


def _client_error(message: str) -> Exception:
    from webapp.connections.kafka_client import KafkaClientError

    return KafkaClientError(message)


def _host(servers: str) -> tuple[str, int]:
    first = servers.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    return host.strip("[]") or first, int(port) if port.isdigit() else 9092


def _check_reachable(settings: KafkaConnectionSpec, timeout: float) -> None:
    """DNS, then TCP, for the first bootstrap server: said in the words the other clients use."""
    host, port = _host(settings.bootstrap_servers)
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise _client_error(
            f"DNS lookup failed: The broker host name in {settings.bootstrap_servers} could not be resolved: check "
            "the spelling and that this server can look it up."
        ) from None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise _client_error(
            f"TCP connection failed: Nothing accepts connections at {host}:{port} ({exc.strerror or exc})."
        ) from None


# Kerberos's own (minor) message -> what it means for the connection's settings. MIT falls back to a credential
# cache when the keytab has no key for the principal, hence "no credentials cache" for a principal the keytab lacks.
_KDC_REASONS = (
    ("cannot contact any kdc", "the KDC did not answer"),
    ("no credentials cache found", "the keytab holds no key for this principal"),
    ("key table entry not found", "the keytab holds no key for this principal"),
    ("client not found in kerberos database", "the KDC does not know this principal"),
    ("preauthentication failed", "the keytab's key is not this principal's current key"),
    ("server not found in kerberos database", "the KDC does not know the broker's principal"),
    ("cannot find kdc", "the realm's KDC is not named (krb5.conf or the KDC address)"),
)


def _kdc_words(settings: KafkaConnectionSpec, error: Exception) -> str:
    text = str(error)
    minor = text.split("Minor (", 1)[1].split("): ", 1)[-1] if "Minor (" in text else text
    reason = next((words for found, words in _KDC_REASONS if found in minor.lower()), "Kerberos refused")
    where = settings.sasl_kerberos_kdc or "the KDC of the connection's krb5.conf"
    principal = settings.sasl_kerberos_principal
    return (
        f"Kerberos (KDC) step failed: no ticket for principal {principal} from {where}: {reason} "
        f"({minor.strip().rstrip('.')}). Check the principal, the keytab (it must hold that principal's current "
        "key), the realm and that the KDC is reachable from the web app."
    )


@contextlib.contextmanager
def kerberos_session(settings: KafkaConnectionSpec, timeout: float) -> Iterator[None]:
    """The Kerberos environment of `settings` with a ticket for its principal, for the duration of the block;
    KafkaClientError in words naming the KDC step when the KDC gives none."""
    import gssapi

    with mit_kerberos_environment(settings) as (files, cache):
        host, _port = _host(settings.bootstrap_servers)
        service = settings.sasl_kerberos_service_name or DEFAULT_SERVICE_NAME
        try:
            principal = gssapi.Name(settings.sasl_kerberos_principal or "", gssapi.NameType.kerberos_principal)
            credentials = gssapi.Credentials(
                name=principal, usage="initiate", store={"client_keytab": files.keytab, "ccache": cache}
            )
            target = gssapi.Name(f"{service}@{host}", gssapi.NameType.hostbased_service)
            # The first step asks the KDC for the ticket-granting ticket and the broker's service ticket.
            gssapi.SecurityContext(name=target, creds=credentials, usage="initiate").step()
        except gssapi.exceptions.GSSError as exc:
            raise _client_error(_kdc_words(settings, exc)) from None
        yield


# -- confluent-kafka's shapes, as the callers read them ------------------------------------------------------


@dataclass(frozen=True)
class _Error:
    error_code: int

    def code(self) -> int:
        return self.error_code

    def fatal(self) -> bool:
        return False

    def retriable(self) -> bool:
        return True


@dataclass(frozen=True)
class _Message:
    topic_name: str
    partition_id: int
    offset_value: int
    key_bytes: bytes | None = None
    value_bytes: bytes | None = None
    timestamp_kind: int = 0
    timestamp_ms: int = -1
    error_value: _Error | None = None

    def topic(self) -> str:
        return self.topic_name

    def partition(self) -> int:
        return self.partition_id

    def offset(self) -> int:
        return self.offset_value

    def key(self) -> bytes | None:
        return self.key_bytes

    def value(self) -> bytes | None:
        return self.value_bytes

    def timestamp(self) -> tuple[int, int]:
        return self.timestamp_kind, self.timestamp_ms

    def error(self) -> _Error | None:
        return self.error_value


@dataclass(frozen=True)
class _Broker:
    host: str
    port: int


@dataclass(frozen=True)
class _Topic:
    partitions: dict[int, None]
    error: None = None


@dataclass(frozen=True)
class _Metadata:
    brokers: dict[int, _Broker]
    topics: dict[str, _Topic]
    cluster_id: str | None


@dataclass(frozen=True)
class _PartitionOffset:
    topic: str
    partition: int
    offset: int
    error: None = None


@dataclass(frozen=True)
class _Offset:
    offset: int

    def result(self, timeout: float | None = None) -> _Offset:
        return self


@dataclass
class GssapiConsumer:
    """kafka-python's consumer over GSSAPI with the methods of confluent-kafka's Consumer the web app calls
    (and of its AdminClient: `list_topics`, `list_offsets`)."""

    settings: KafkaConnectionSpec
    timeout: float
    _session: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _consumer: Any = None
    _buffer: list[_Message] = field(default_factory=list)
    _ends: dict[Any, int] = field(default_factory=dict)
    _at_end: set[Any] = field(default_factory=set)

    def open(self) -> GssapiConsumer:
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError

        _check_reachable(self.settings, self.timeout)
        self._session.enter_context(kerberos_session(self.settings, self.timeout))
        timeout_ms = max(1000, int(self.timeout * 1000))
        try:
            self._consumer = KafkaConsumer(
                bootstrap_servers=self.settings.bootstrap_servers.split(","),
                security_protocol=self.settings.security_protocol,
                sasl_mechanism="GSSAPI",
                sasl_kerberos_service_name=self.settings.sasl_kerberos_service_name or DEFAULT_SERVICE_NAME,
                ssl_cafile=self._ca_file(),
                client_id="clearflow-webapp",
                group_id=None,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                bootstrap_timeout_ms=timeout_ms,
                request_timeout_ms=timeout_ms + 1000,
                fetch_max_wait_ms=100,
                reconnect_backoff_max_ms=1000,
            )
        except KafkaError as exc:
            self.close()
            raise _client_error(
                f"SASL authentication failed: The broker at {self.settings.bootstrap_servers} did not complete a "
                f"Kerberos (GSSAPI) login within {self.timeout:g} seconds ({type(exc).__name__}). Check the "
                "service name (the broker's principal is <service>/<broker host>), that the broker has a GSSAPI "
                "listener at this address, and the security protocol."
            ) from None
        except Exception:
            self.close()
            raise
        return self

    def _ca_file(self) -> str | None:
        if not self.settings.ssl_ca_pem:
            return None
        from clearflow_spec.client_config import write_ca_file

        return write_ca_file(self.settings.ssl_ca_pem)

    def _fail(self, exc: Exception, what: str) -> Exception:
        from kafka.errors import AuthorizationError

        if isinstance(exc, AuthorizationError):
            return _client_error(
                f"Authorization failed: The broker refused principal {self.settings.sasl_kerberos_principal} "
                f"to {what} ({type(exc).__name__}). Ask the cluster's administrator for the ACLs to describe and "
                "read the topics."
            )
        return _client_error(f"The broker did not answer the request to {what} in time ({type(exc).__name__}).")

    def list_topics(self, timeout: float | None = None) -> _Metadata:
        from kafka.errors import KafkaError

        try:
            names = self._consumer.topics()
            partitions = {name: self._consumer.partitions_for_topic(name) or set() for name in names}
        except KafkaError as exc:
            raise self._fail(exc, "describe the topics") from None
        cluster = self._consumer._client.cluster  # the metadata kafka-python keeps: brokers and the cluster id
        return _Metadata(
            brokers={b.node_id: _Broker(host=b.host, port=b.port) for b in cluster.brokers()},
            topics={name: _Topic(partitions=dict.fromkeys(sorted(ids))) for name, ids in partitions.items()},
            cluster_id=getattr(cluster, "cluster_id", None),
        )

    def _offsets(self, partitions: list[Any], earliest: bool) -> dict[Any, int]:
        from kafka import TopicPartition
        from kafka.errors import KafkaError

        asked = [TopicPartition(tp.topic, tp.partition) for tp in partitions]
        timeout_ms = max(1000, int(self.timeout * 1000))
        try:
            read = self._consumer.beginning_offsets if earliest else self._consumer.end_offsets
            found = read(asked, timeout_ms=timeout_ms)
        except KafkaError as exc:
            raise self._fail(exc, "read the topics' offsets") from None
        return {(tp.topic, tp.partition): found[tp] for tp in asked}

    def get_watermark_offsets(self, partition: Any, timeout: float | None = None, cached: bool = False) -> tuple:
        key = (partition.topic, partition.partition)
        return self._offsets([partition], True)[key], self._offsets([partition], False)[key]

    def list_offsets(self, specs: dict[Any, Any], request_timeout: float | None = None) -> dict[Any, _Offset]:
        earliest = [tp for tp, spec in specs.items() if type(spec).__name__ == "EarliestSpec"]
        latest = [tp for tp in specs if tp not in earliest]
        found = {**self._offsets(earliest, True), **self._offsets(latest, False)}
        return {tp: _Offset(found[(tp.topic, tp.partition)]) for tp in specs}

    def offsets_for_times(self, partitions: list[Any], timeout: float | None = None) -> list[_PartitionOffset]:
        """Each partition's first offset at or after its timestamp (given as the offset, as confluent-kafka
        takes it); -1 where there is none."""
        from kafka import TopicPartition
        from kafka.errors import KafkaError

        asked = {TopicPartition(tp.topic, tp.partition): tp.offset for tp in partitions}
        try:
            found = self._consumer.offsets_for_times(asked, timeout_ms=max(1000, int(self.timeout * 1000)))
        except KafkaError as exc:
            raise self._fail(exc, "find the topics' offsets by time") from None
        return [
            _PartitionOffset(tp.topic, tp.partition, found[tp].offset if found.get(tp) is not None else -1)
            for tp in asked
        ]

    def assign(self, partitions: list[Any]) -> None:
        from kafka import TopicPartition

        wanted = {TopicPartition(tp.topic, tp.partition): tp.offset for tp in partitions}
        self._consumer.assign(list(wanted))
        for tp, offset in wanted.items():
            self._consumer.seek(tp, max(0, offset))
        ends = self._offsets(list(wanted), False)
        self._ends = {tp: ends[(tp.topic, tp.partition)] for tp in wanted}
        self._at_end = set()

    def poll(self, timeout: float | None = None) -> _Message | None:
        from kafka.errors import KafkaError

        if not self._buffer:
            try:
                batches = self._consumer.poll(timeout_ms=int((timeout or 0) * 1000))
            except KafkaError as exc:
                raise self._fail(exc, "read the topics") from None
            for records in batches.values():
                self._buffer += [
                    _Message(
                        topic_name=r.topic,
                        partition_id=r.partition,
                        offset_value=r.offset,
                        key_bytes=r.key,
                        value_bytes=r.value,
                        timestamp_kind=(r.timestamp_type + 1) if r.timestamp is not None else 0,
                        timestamp_ms=r.timestamp if r.timestamp is not None else -1,
                    )
                    for r in records
                ]
            if not self._buffer:
                self._buffer += self._ends_reached()
        return self._buffer.pop(0) if self._buffer else None

    def consume(self, num_messages: int = 1, timeout: float | None = None) -> list[_Message]:
        first = self.poll(timeout)
        if first is None:
            return []
        taken = [first, *self._buffer[: max(0, num_messages - 1)]]
        del self._buffer[: len(taken) - 1]
        return taken

    def _ends_reached(self) -> list[_Message]:
        """An end-of-partition message once per partition read up to its end offset (as confluent-kafka's
        `enable.partition.eof` reports), so that a reader past transaction markers knows it is done."""
        reached = []
        for tp, end in self._ends.items():
            position = self._consumer.position(tp, timeout_ms=1000)
            if tp not in self._at_end and position is not None and position >= end:
                self._at_end.add(tp)
                reached.append(_Message(tp.topic, tp.partition, position, error_value=_Error(_PARTITION_EOF)))
        return reached

    def close(self) -> None:
        try:
            if self._consumer is not None:
                self._consumer.close(autocommit=False)
        finally:
            self._consumer = None
            self._session.close()


def gssapi_consumer(settings: KafkaConnectionSpec, timeout: float) -> GssapiConsumer:
    """A GSSAPI consumer, logged in and bootstrapped; KafkaClientError in words naming the failed step."""
    started = time.monotonic()
    consumer = GssapiConsumer(settings=settings, timeout=timeout)
    consumer.open()
    consumer.timeout = max(1.0, timeout - (time.monotonic() - started))
    return consumer
