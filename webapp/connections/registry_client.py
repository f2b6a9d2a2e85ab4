"""Schema registry access for the wizard and the API: test a connection, a topic's registered versions, the
schemas of the ids sampled events carry, and sampled events decoded with them.

The registry is read with `clearflow_spec.schema_registry` (confluent-kafka's SchemaRegistryClient, the one the
job uses); every request here is bounded by a timeout of a few seconds without retries, and the registry's
errors come out as one plain-words `SchemaRegistryClientError` (API 502). Every function takes the spec's
connection model (`SchemaRegistryConnectionSpec`, from `connection.client_settings()`).

Decoding a sampled event: Confluent's wire format (magic byte 0, a 4-byte big-endian schema id, the Avro
body, or Protobuf's message indexes and message), the body read with fastavro (confluent-kafka's own Avro
dependency) or the `protobuf` package (`clearflow_spec.protobuf_record.decode_record`) against the writer schema,
the values made JSON-able the way the job writes them (timestamps and dates as ISO text, decimals and UUIDs as
text, bytes as base64).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import io
import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from clearflow_spec.avro_schema import split_wire_format
from clearflow_spec.connections import SchemaRegistryConnectionSpec
from clearflow_spec.protobuf_record import decode_record
from clearflow_spec.protobuf_schema import is_protobuf
from clearflow_spec.schema_registry import RegistryError, SubjectVersion, explain, registry_client, value_subject
from webapp.core.exceptions import ExternalServiceError

DEFAULT_TIMEOUT = 5.0


class SchemaRegistryClientError(ExternalServiceError):
    """The registry could not be reached or refused the request; `message` says why in plain words."""

    code = "schema_registry_error"


@dataclass(frozen=True)
class SchemaRegistryInfo:
    subject_count: int
    subjects: list[str]  # the first few, sorted


@dataclass(frozen=True)
class TopicSchemas:
    """What a registry holds for a topic's values: its subject and every version, oldest first."""

    subject: str
    versions: list[SubjectVersion]

    @property
    def latest(self) -> SubjectVersion | None:
        return self.versions[-1] if self.versions else None

    def version_of(self, schema_id: int) -> SubjectVersion | None:
        return next((v for v in self.versions if v.schema_id == schema_id), None)


def check_connection(settings: SchemaRegistryConnectionSpec, *, timeout: float = DEFAULT_TIMEOUT) -> SchemaRegistryInfo:
    """The registry's subjects (a request every Confluent-compatible registry answers)."""
    with registry_client(settings, timeout=timeout) as client:
        try:
            subjects = sorted(client.get_subjects())
        except Exception as exc:
            raise SchemaRegistryClientError(_sentence(explain(exc, settings, "its subjects"))) from None
    return SchemaRegistryInfo(subject_count=len(subjects), subjects=subjects[:20])


def topic_schemas(
    settings: SchemaRegistryConnectionSpec, topic: str, *, timeout: float = DEFAULT_TIMEOUT
) -> TopicSchemas:
    """The versions of `topic`'s value subject (`<topic>-value`); an empty list when it has none."""
    subject = value_subject(topic)
    try:
        versions = _subject_versions(settings, subject, timeout)
    except RegistryError as exc:
        raise SchemaRegistryClientError(_sentence(exc)) from None
    return TopicSchemas(subject=subject, versions=versions)


def _subject_versions(settings: SchemaRegistryConnectionSpec, subject: str, timeout: float) -> list[SubjectVersion]:
    from clearflow_spec.schema_registry import subject_versions

    return subject_versions(settings, subject, timeout=timeout)


def schemas_by_id(
    settings: SchemaRegistryConnectionSpec, ids: Iterable[int], *, timeout: float = DEFAULT_TIMEOUT
) -> dict[int, str]:
    """The Avro or Protobuf schema text of each id the registry has (ids it lacks, or JSON schemas, are left out)."""
    return _schemas(settings, ids, timeout)[0]


def _schemas(
    settings: SchemaRegistryConnectionSpec, ids: Iterable[int], timeout: float
) -> tuple[dict[int, str], dict[int, str]]:
    """(Avro or Protobuf schema text by id, why each other id cannot be read: "is a JSON schema")."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    found: dict[int, str] = {}
    unreadable: dict[int, str] = {}
    wanted = sorted(set(ids))
    if not wanted:
        return found, unreadable
    with registry_client(settings, timeout=timeout) as client:
        for schema_id in wanted:
            try:
                schema = client.get_schema(schema_id)
            except SchemaRegistryError as exc:
                if exc.http_status_code == 404:
                    unreadable[schema_id] = f"schema id {schema_id} is not in the registry"
                    continue
                raise SchemaRegistryClientError(_sentence(explain(exc, settings, f"schema id {schema_id}"))) from None
            except Exception as exc:
                raise SchemaRegistryClientError(_sentence(explain(exc, settings, f"schema id {schema_id}"))) from None
            kind = (schema.schema_type or "AVRO").upper()
            if kind in ("AVRO", "PROTOBUF"):  # told apart by their text (protobuf_schema.is_protobuf)
                found[schema_id] = schema.schema_str
            else:
                unreadable[schema_id] = f"schema id {schema_id} is a {kind} schema; ClearFlow reads Avro and Protobuf"
    return found, unreadable


def _sentence(error: Exception) -> str:
    text = str(error)
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


# -- sampled events -------------------------------------------------------------------------------------


def decode_avro(body: bytes, schema: str) -> Any:
    """The JSON-able value of one wire-format event's Avro body (after the header), read with its writer schema."""
    import fastavro

    parsed = fastavro.parse_schema(json.loads(schema))
    record = fastavro.schemaless_reader(io.BytesIO(body), parsed, None)
    return _jsonable(record)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return aware.isoformat().replace("+00:00", "Z")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


@dataclass(frozen=True)
class DecodedSample:
    """Sampled events with Avro values decoded; which schema ids they used; events that could not be read."""

    events: list[Any]  # kafka_client.SampledEvent, `value` decoded, `schema_id` set
    schema_ids: list[int]
    schemas: dict[int, str]
    undecodable: int


def decode_events(
    settings: SchemaRegistryConnectionSpec, events: Sequence[Any], *, timeout: float = DEFAULT_TIMEOUT
) -> DecodedSample:
    """`events` (kafka_client.SampledEvent) with their `value` decoded from their bytes (`raw`). An event that
    is not in the wire format, or whose schema the registry lacks, keeps its text and gets `decode_error`
    (the job would send it to the dead letters with that reason)."""
    framed: list[tuple[int, bytes] | str] = []  # (schema id, body), or why the event is not framed
    for event in events:
        try:
            framed.append(split_wire_format(event.raw))
        except ValueError as exc:
            framed.append(str(exc))
    ids = [frame[0] if isinstance(frame, tuple) else None for frame in framed]
    schemas, unreadable = _schemas(settings, [i for i in ids if i is not None], timeout)
    decoded, bad = [], 0
    for event, frame in zip(events, framed, strict=True):
        if isinstance(frame, str):
            bad += 1
            decoded.append(replace(event, is_json=False, decode_error=frame))
            continue
        schema_id, body = frame
        schema = schemas.get(schema_id)
        if schema is None:
            bad += 1
            reason = unreadable.get(schema_id, f"schema id {schema_id} is not in the registry")
            decoded.append(replace(event, is_json=False, schema_id=schema_id, decode_error=reason))
            continue
        try:
            protobuf = is_protobuf(schema)
            value = decode_record(schema, body) if protobuf else decode_avro(body, schema)
        except Exception as exc:  # fastavro and protobuf raise many kinds for a body that does not match its schema
            bad += 1
            kind = "Protobuf" if protobuf else "Avro"
            reason = f"not {kind} of schema id {schema_id}: {exc}"
            decoded.append(replace(event, is_json=False, schema_id=schema_id, decode_error=reason))
            continue
        decoded.append(replace(event, value=value, is_json=True, schema_id=schema_id, decode_error=None))
    used = sorted({i for i in ids if i is not None and i in schemas})
    return DecodedSample(events=decoded, schema_ids=used, schemas=schemas, undecodable=bad)
