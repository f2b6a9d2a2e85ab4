"""Schemas from a Confluent-compatible schema registry, for the job and the web app. No Spark, no Django.

Subjects follow the topic name strategy (Confluent's default): the values of topic `orders` are registered
under `orders-value`. The client is confluent-kafka's `SchemaRegistryClient`, built from the connection spec
(`clearflow_spec.client_config.schema_registry_client_conf`).

- `subject_versions(connection, subject)`: every version of a subject with its schema id and text;
- `writer_schemas(connection, topics, extra_ids=..., kind=...)`: the Avro (or Protobuf) schemas a run decodes with;
- `registry_field_issues(fields, versions)`: the spec's `source.fields` checked against the subject.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from clearflow_spec import protobuf_schema
from clearflow_spec.avro_schema import AvroSchemaError, SchemaField, WriterSchemas, fields_by_path
from clearflow_spec.client_config import schema_registry_client_conf, write_ca_file
from clearflow_spec.connections import SchemaRegistryConnectionSpec
from clearflow_spec.limits import LimitError
from clearflow_spec.proto_parser import ProtobufSchemaError

if TYPE_CHECKING:
    from clearflow_spec.spec import FieldSpec, SpecIssue

NOT_FOUND = 404


class RegistryError(RuntimeError):
    """The registry could not be asked or refused; the message says what happened and what to change."""


@dataclass(frozen=True)
class SubjectVersion:
    subject: str
    version: int
    schema_id: int
    schema_type: str  # AVRO, PROTOBUF, JSON
    schema: str

    def fields(self) -> dict[str, SchemaField]:
        """The version's fields by path (an empty dict for a schema that is neither an Avro record nor a .proto
        with a message: JSON schemas, unreadable text). LimitError for a schema over a cap
        (`limits.SCHEMA_FIELDS`, `SCHEMA_DEPTH`): what it holds is not known, so it is not taken as empty."""
        try:
            if self.schema_type == "PROTOBUF":
                return protobuf_schema.fields_by_path(self.schema)
            return fields_by_path(self.schema) if self.schema_type == "AVRO" else {}
        except LimitError:
            raise
        except (AvroSchemaError, ProtobufSchemaError):
            return {}


def value_subject(topic: str) -> str:
    return f"{topic}-value"


@contextlib.contextmanager
def registry_client(connection: SchemaRegistryConnectionSpec, *, timeout: float | None = None) -> Iterator[Any]:
    """A SchemaRegistryClient for `connection` (its CA certificate in a private temporary file meanwhile);
    `timeout` bounds each request (see `schema_registry_client_conf`)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    ca_file = write_ca_file(connection.ssl_ca_pem) if connection.ssl_ca_pem else None
    try:
        client = SchemaRegistryClient(schema_registry_client_conf(connection, ca_file=ca_file, timeout=timeout))
        try:
            yield client
        finally:
            client.close()
    finally:
        if ca_file:
            with contextlib.suppress(OSError):
                os.unlink(ca_file)


def explain(exc: Exception, connection: SchemaRegistryConnectionSpec, what: str) -> RegistryError:
    """`exc` in words: the far end's status and its standard reason, never the body of its answer (which could be
    any internal server's error page), nor text the far end chose."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    if isinstance(exc, SchemaRegistryError):
        status = exc.http_status_code
        if status == 401:
            return RegistryError(f"the schema registry at {connection.url} refused the user name or password")
        if status == 403:
            return RegistryError(f"the schema registry at {connection.url} does not let this user read {what}")
        return RegistryError(f"the schema registry at {connection.url} answered {status} ({_reason(status)})")
    text = str(exc) or type(exc).__name__
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return RegistryError(
            f"the TLS certificate of the schema registry at {connection.url} is not signed by the CA certificate "
            "given (or no CA certificate was given for a private CA)"
        )
    if isinstance(exc, ValueError | KeyError | TypeError | AttributeError):
        # An answer that is not the registry's JSON (an HTML page, another API): its text stays out of the message.
        return RegistryError(
            f"the server at {connection.url} does not answer as a schema registry does (check the URL: the "
            "registry API's root)"
        )
    return RegistryError(f"could not reach the schema registry at {connection.url}: {_short(text)}")


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "an unknown status"


def _short(text: str, limit: int = 160) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def registered_topics(
    connection: SchemaRegistryConnectionSpec, reads_topic: Callable[[str], bool], *, timeout: float | None = None
) -> list[str]:
    """The topics with a value subject in the registry that `reads_topic` accepts (a source's topic pattern), by
    name: the subjects a pattern source's writer schemas come from. A topic created later with a new subject is
    decoded through the schema ids its records carry."""
    suffix = value_subject("")
    with registry_client(connection, timeout=timeout) as client:
        try:
            subjects = client.get_subjects()
        except Exception as exc:
            raise explain(exc, connection, "the list of subjects") from None
    return sorted(
        s.removesuffix(suffix) for s in subjects if s.endswith(suffix) and reads_topic(s.removesuffix(suffix))
    )


def subject_versions(
    connection: SchemaRegistryConnectionSpec, subject: str, *, timeout: float | None = None
) -> list[SubjectVersion]:
    """Every version of `subject`, oldest first; [] when the subject does not exist."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    with registry_client(connection, timeout=timeout) as client:
        try:
            numbers = client.get_versions(subject)
            registered = [client.get_version(subject, number) for number in numbers]
        except SchemaRegistryError as exc:
            if exc.http_status_code == NOT_FOUND:
                return []
            raise explain(exc, connection, f"subject {subject!r}") from None
        except Exception as exc:
            raise explain(exc, connection, f"subject {subject!r}") from None
    return [
        SubjectVersion(
            subject=subject,
            version=int(item.version),
            schema_id=int(item.schema_id),
            schema_type=(item.schema.schema_type or "AVRO").upper(),
            schema=item.schema.schema_str,
        )
        for item in registered
    ]


def writer_schemas(
    connection: SchemaRegistryConnectionSpec,
    topics: Sequence[str],
    *,
    extra_ids: Iterable[int] = (),
    kind: str = "AVRO",
) -> WriterSchemas:
    """The writer schemas of `kind` (AVRO or PROTOBUF) of every version of the topics' value subjects, plus
    `extra_ids` (ids records carried that were not among them: looked up by id; one the registry lacks is
    dead-lettered, not retried)."""
    label = _KIND_LABELS.get(kind, kind)
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    by_id: dict[int, str] = {}
    unreadable: dict[int, str] = {}
    for topic in topics:
        for version in subject_versions(connection, value_subject(topic)):
            if version.schema_type == kind:
                by_id[version.schema_id] = version.schema
            else:
                unreadable[version.schema_id] = f"is a {version.schema_type} schema, not {label}"
    wanted = sorted(set(extra_ids) - set(by_id) - set(unreadable))
    if wanted:
        with registry_client(connection) as client:
            for schema_id in wanted:
                try:
                    schema = client.get_schema(schema_id)
                except SchemaRegistryError as exc:
                    if exc.http_status_code != NOT_FOUND:
                        raise explain(exc, connection, f"schema id {schema_id}") from None
                    unreadable[schema_id] = "is not in the schema registry"
                    continue
                except Exception as exc:
                    raise explain(exc, connection, f"schema id {schema_id}") from None
                found = (schema.schema_type or "AVRO").upper()
                if found == kind:
                    by_id[schema_id] = schema.schema_str
                else:
                    unreadable[schema_id] = f"is a {found} schema, not {label}"
    return WriterSchemas(by_id=by_id, confluent=True, unreadable=unreadable)


_KIND_LABELS = {"AVRO": "Avro", "PROTOBUF": "Protobuf"}


def registry_field_issues(
    fields: Sequence[FieldSpec], versions_by_subject: dict[str, list[SubjectVersion]], *, kind: str = "AVRO"
) -> list[SpecIssue]:
    """`source.fields` against the registered versions: a field that no version of a topic's subject has is an
    error under its path; so is a topic whose subject has no version of `kind` (AVRO or PROTOBUF)."""
    from clearflow_spec.spec import SpecIssue, schema_field_issues

    label = _KIND_LABELS.get(kind, kind)
    issues: list[SpecIssue] = []
    for subject, versions in versions_by_subject.items():
        usable = [version for version in versions if version.schema_type == kind]
        if not usable:
            kinds = sorted({version.schema_type for version in versions})
            found = f"only {', '.join(kinds)} versions" if kinds else "no version"
            issues.append(SpecIssue("source.topics", f"subject '{subject}' has {found} in the registry, no {label}"))
            continue
        known: dict[str, SchemaField] = {}
        over_cap: list[SpecIssue] = []
        for version in usable:
            try:
                known.update(version.fields())
            except LimitError as exc:
                where = f"subject '{subject}' version {version.version} (schema id {version.schema_id})"
                over_cap.append(SpecIssue("source.topics", f"{where}: {exc}"))
        if over_cap:  # the fields of a schema over a cap are not known: naming them all missing would mislead
            issues += over_cap
            continue
        issues += schema_field_issues(fields, known, where=f"any version of subject '{subject}'")
    return issues
