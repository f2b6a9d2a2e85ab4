"""Pipeline files: YAML or JSON documents of four kinds, read (`clearflow.document_files`), checked and turned
into API requests.

    kind: kafka-connection          kind: clickhouse-connection        kind: pipeline
    name: local-kafka               name: local-clickhouse             name: signups
    bootstrap_servers: ...          host: ...                          kafka_connection: local-kafka
                                    password: ${CLICKHOUSE_PASSWORD}   clickhouse_connection: local-clickhouse
    kind: schema-registry-connection                                   schema_registry_connection: registry
    name: registry                                                     spec: {source: ..., dedup: ..., sink: ...}
    url: ...

A pipeline names a schema registry connection only when it reads Avro in the Confluent wire format.

A connection document holds the fields of the spec's connection model (`clearflow_spec.connections`); a field left
out takes its default, and a secret left out is cleared. Its secrets (and only they) may read the environment:
`${ENV_VAR}` and `${ENV_VAR:-default}`, for the names the document declares in `env: [ENV_VAR, ...]`; a secret
whose variable is not set (or empty) keeps the value the server has. In every value `$$` is a `$`. A file from a
pull request therefore cannot copy a CI runner's variables into a URL, a user name or a server list, where they
would be stored in plain text, printed by `diff` and contacted by the server. A pipeline document's `spec` is the
pipeline spec (`clearflow_spec.spec`) without what its connections give (`source.kafka`, `source.schema_registry`,
`sink.clickhouse` but its `database`): it is checked with the server's own model (`clearflow.spec_check`), and
its problems carry the API's paths. The `${ENV_VAR}` references are read by `clearflow.env_references`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from clearflow.document_files import RawDocument
from clearflow.env_references import ENV_KEY, declared_variables, interpolate, references, unescape
from clearflow.errors import DocumentError, ErrorItem
from clearflow_spec.connections import (
    KAFKA_SECRET_FLAGS,
    PIPELINE_DATABASE,
    SECRET_MASK,
    ClickHouseConnectionSpec,
    KafkaConnectionSpec,
    SchemaRegistryConnectionSpec,
    connection_dict,
    connection_from_values,
    secret_fields,
)


@dataclass(frozen=True)
class ConnectionKind:
    kind: str  # the document's `kind`
    slug: str  # the API's path part: /api/v1/connections/<slug>/
    label: str
    model: type[BaseModel]  # the spec's connection model: the document's fields
    secret_flags: dict[str, str]  # secret field -> the API output's flag that says it is set
    pipeline_field: str  # the pipeline document's (and the API's) field naming a connection of this kind
    spec_section: str  # where the spec holds the connection's settings: `source.<section>` or `sink.<section>`

    @property
    def secrets(self) -> tuple[str, ...]:
        return secret_fields(self.model)


KAFKA = ConnectionKind(
    "kafka-connection",
    "kafka",
    "Kafka",
    KafkaConnectionSpec,
    KAFKA_SECRET_FLAGS,
    "kafka_connection",
    "kafka",
)
CLICKHOUSE = ConnectionKind(
    "clickhouse-connection",
    "clickhouse",
    "ClickHouse",
    ClickHouseConnectionSpec,
    {"password": "has_password"},
    "clickhouse_connection",
    "clickhouse",
)
SCHEMA_REGISTRY = ConnectionKind(
    "schema-registry-connection",
    "schema-registry",
    "schema registry",
    SchemaRegistryConnectionSpec,
    {"password": "has_password"},
    "schema_registry_connection",
    "schema_registry",
)
CONNECTION_KINDS = {KAFKA.kind: KAFKA, CLICKHOUSE.kind: CLICKHOUSE, SCHEMA_REGISTRY.kind: SCHEMA_REGISTRY}
PIPELINE = "pipeline"
KINDS = (KAFKA.kind, CLICKHOUSE.kind, SCHEMA_REGISTRY.kind, PIPELINE)


# -- the documents -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConnectionDocument:
    kind: ConnectionKind
    name: str
    where: str
    settings: dict[str, Any]  # every setting but the secrets, validated, as the API takes them ("" for not set)
    secrets: dict[str, str | None]  # secret -> value; "" not set (cleared); None: its ${VAR} is unset (kept)
    data: Any  # the document as written, to tell a repeated definition from a different one
    notes: list[str] = field(default_factory=list)

    def body(self) -> dict[str, Any]:
        """The API's connection input: name, settings, and the secrets that have a value to send."""
        secrets = {name: value for name, value in self.secrets.items() if value is not None}
        return {"name": self.name, **self.settings, **secrets}

    def spec(self) -> BaseModel:
        """The spec's connection model, secrets masked (what a pipeline's spec is checked with)."""
        values = {**self.settings, **{k: SECRET_MASK if v is None else v for k, v in self.secrets.items()}}
        return _spec_of(self.kind, values)


@dataclass(frozen=True)
class PipelineDocument:
    name: str
    where: str
    kafka_connection: str
    clickhouse_connection: str
    spec: dict[str, Any]
    schema_registry_connection: str | None = None  # Avro in the Confluent wire format: where its schemas are

    def connection_name(self, kind: ConnectionKind) -> str | None:
        """The name of the connection of `kind` it uses (None: it uses no schema registry)."""
        return getattr(self, kind.pipeline_field)

    def connection_kinds(self) -> list[ConnectionKind]:
        """The kinds of connection it names: Kafka, ClickHouse, and the schema registry when it names one."""
        return [kind for kind in CONNECTION_KINDS.values() if self.connection_name(kind) is not None]


@dataclass(frozen=True)
class Documents:
    connections: list[ConnectionDocument]
    pipelines: list[PipelineDocument]

    def connection(self, kind: ConnectionKind, name: str) -> ConnectionDocument | None:
        return next((c for c in self.connections if c.kind is kind and c.name == name), None)


def _spec_of(kind: ConnectionKind, values: Mapping[str, Any]) -> BaseModel:
    """The spec model from stored-style values ("" for "not set" where the spec says None)."""
    fields = kind.model.model_fields
    cleaned = {k: None if v == "" and k in fields and fields[k].default is None else v for k, v in values.items()}
    return connection_from_values(kind.model, cleaned)


def _api_settings(model: BaseModel, kind: ConnectionKind) -> dict[str, Any]:
    """Non-secret settings as the API stores them: None is "" (its text fields are not nullable)."""
    data = connection_dict(model, reveal_secrets=False)
    return {k: "" if v is None else v for k, v in data.items() if k not in kind.secrets}


def _pydantic_issues(exc: ValidationError, prefix: str = "") -> list[ErrorItem]:
    issues = []
    for error in exc.errors(include_url=False, include_input=False):
        path = prefix
        for part in error["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        issues.append(ErrorItem(path, error["msg"].removeprefix("Value error, ")))
    return issues


def _where(raw: RawDocument, kind: str, name: str) -> str:
    return f"{raw.where} ({kind} {name!r})"


def _connection_document(
    raw: RawDocument, kind: ConnectionKind, env: Mapping[str, str], issues: list[ErrorItem]
) -> ConnectionDocument | None:
    data = dict(raw.data)
    data.pop("kind")
    name = data.pop("name", None)
    where = _where(raw, kind.kind, str(name))
    if not isinstance(name, str) or not name.strip() or name != name.strip() or len(name) > 100:
        message = "give the connection a name (at most 100 characters, no spaces at its ends)"
        issues.append(ErrorItem("name", message, where))
        return None
    values: dict[str, Any] = {}
    secrets: dict[str, str | None] = {}
    notes: list[str] = []
    found: list[ErrorItem] = []
    declared = declared_variables(data.pop(ENV_KEY, []), where, found)
    for key, value in data.items():
        if isinstance(value, str) and key not in kind.secrets:
            if names := references(value):
                found.append(ErrorItem(str(key), _not_a_secret(kind, names[0]), where))
                continue
            value = unescape(value)
        elif isinstance(value, str):
            if undeclared := [name for name in references(value) if name not in declared]:
                message = (
                    f"${{{undeclared[0]}}} is not declared: list the variables this document's secrets read in "
                    f"`{ENV_KEY}: [{', '.join(undeclared)}]`"
                )
                found.append(ErrorItem(str(key), message, where))
                continue
            text, missing = interpolate(value, env)
            if missing and key in kind.secrets and value.strip() == f"${{{missing[0]}}}":
                secrets[key] = None  # its variable is not set: the server keeps the secret it has
                notes.append(f"{key}: ${{{missing[0]}}} is not set, so the saved {key} is kept")
                continue
            if missing:
                names = ", ".join(missing)
                found.append(ErrorItem(str(key), f"environment variable {names} is not set (or empty)", where))
                continue
            if key in kind.secrets and value and "${" not in value:
                notes.append(f"{key} is written in the file: use ${{ENV_VAR}} to keep it out of version control")
            value = text
        if key in kind.secrets:
            secrets[key] = "" if value is None else value
        else:
            values[key] = value
    for secret in kind.secrets:
        secrets.setdefault(secret, "")  # left out: not set
    if found:
        issues += found
        return None
    try:
        spec = _spec_of(kind, {**values, **{k: SECRET_MASK if v is None else v for k, v in secrets.items()}})
    except ValidationError as exc:
        issues += [ErrorItem(i.path, i.message, where) for i in _pydantic_issues(exc)]
        return None
    return ConnectionDocument(kind, name, where, _api_settings(spec, kind), secrets, raw.data, notes)


def _not_a_secret(kind: ConnectionKind, name: str) -> str:
    secrets = ", ".join(kind.secrets)
    return f"${{{name}}}: only secrets ({secrets}) read environment variables; write this value itself ($$ for a $)"


_PIPELINE_KEYS = ("kind", "name", "kafka_connection", "clickhouse_connection", "schema_registry_connection", "spec")


def _pipeline_document(raw: RawDocument, issues: list[ErrorItem]) -> PipelineDocument | None:
    data = raw.data
    name = data.get("name")
    where = _where(raw, PIPELINE, str(name))
    found = [ErrorItem(str(key), f"unknown field; a pipeline has {', '.join(_PIPELINE_KEYS)}", where) for key in data]
    found = [item for item in found if item.path not in _PIPELINE_KEYS]
    for key in ("name", "kafka_connection", "clickhouse_connection"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            wanted = "a name" if key == "name" else "a connection's name"
            found.append(ErrorItem(key, f"required: {wanted}", where))
    registry = data.get(SCHEMA_REGISTRY.pipeline_field)
    if registry is not None and (not isinstance(registry, str) or not registry.strip()):
        found.append(ErrorItem(SCHEMA_REGISTRY.pipeline_field, "a schema registry connection's name", where))
    spec = data.get("spec")
    if not isinstance(spec, dict):
        found.append(ErrorItem("spec", "required: the pipeline spec (source, dedup, sink...)", where))
    else:
        found += [ErrorItem(path, message, where) for path, message in _connection_parts(spec, name)]
    if found:
        issues += found
        return None
    return PipelineDocument(name, where, data["kafka_connection"], data["clickhouse_connection"], spec, registry)


def _connection_parts(spec: dict[str, Any], name: Any) -> Iterable[tuple[str, str]]:
    """Parts of a spec that a pipeline file does not hold: they come from the document's name and connections."""
    if "name" in spec and spec["name"] != name:
        yield "spec.name", f"differs from the pipeline's name {name!r}: leave it out"
    source, sink = spec.get("source"), spec.get("sink")
    if isinstance(source, dict) and "kafka" in source:
        yield "spec.source.kafka", "comes from the connection named in kafka_connection: leave it out"
    if isinstance(source, dict) and "schema_registry" in source:
        yield (
            "spec.source.schema_registry",
            "comes from the connection named in schema_registry_connection: leave it out",
        )
    clickhouse = sink.get("clickhouse") if isinstance(sink, dict) else None
    if isinstance(clickhouse, dict):
        for key in clickhouse:
            if key != PIPELINE_DATABASE:
                yield (
                    f"spec.sink.clickhouse.{key}",
                    f"comes from the connection named in clickhouse_connection (only {PIPELINE_DATABASE} goes here)",
                )


def parse_documents(raws: Sequence[RawDocument], *, env: Mapping[str, str] | None = None) -> Documents:
    """Typed documents, or DocumentError listing every problem with its file, document and path."""
    env = os.environ if env is None else env
    issues: list[ErrorItem] = []
    connections: list[ConnectionDocument] = []
    pipelines: list[PipelineDocument] = []
    for raw in raws:
        kind = raw.data.get("kind") if isinstance(raw.data, dict) else None
        if kind not in KINDS:
            given = f"kind {kind!r}" if kind is not None else "no kind"
            issues.append(ErrorItem("kind", f"{given}: each document needs kind {', '.join(KINDS)}", raw.where))
        elif kind == PIPELINE:
            if (pipeline := _pipeline_document(raw, issues)) is not None:
                pipelines.append(pipeline)
        elif (connection := _connection_document(raw, CONNECTION_KINDS[kind], env, issues)) is not None:
            connections.append(connection)
    issues += _repeated(connections, pipelines)
    if issues:
        raise DocumentError(_nothing_applied(issues), errors=issues)
    unique: dict[tuple[str, str], ConnectionDocument] = {}
    for connection in connections:  # repeated as it is: once
        unique.setdefault((connection.kind.kind, connection.name), connection)
    return Documents(list(unique.values()), pipelines)


def _repeated(connections: list[ConnectionDocument], pipelines: list[PipelineDocument]) -> list[ErrorItem]:
    """A pipeline defined twice is an error; a connection repeated as it is (e.g. in two exported files) is not."""
    issues = []
    for i, pipeline in enumerate(pipelines):
        for earlier in pipelines[:i]:
            if earlier.name == pipeline.name:
                message = f"pipeline {pipeline.name!r} is defined twice: also in {earlier.where}"
                issues.append(ErrorItem("name", message, pipeline.where))
    for i, connection in enumerate(connections):
        for earlier in connections[:i]:
            if earlier.kind is connection.kind and earlier.name == connection.name and earlier.data != connection.data:
                message = f"{connection.kind.kind} {connection.name!r} is defined differently in {earlier.where}"
                issues.append(ErrorItem("name", message, connection.where))
    return issues


def _nothing_applied(issues: list[ErrorItem]) -> str:
    count = len(issues)
    return f"{count} problem{'s' if count != 1 else ''} in the files; nothing was applied."


def connection_spec_from_api(kind: ConnectionKind, output: Mapping[str, Any]) -> BaseModel:
    """The spec's connection model of a saved connection, from the API's answer (a secret that is set is masked)."""
    values = {name: output[name] for name in kind.model.model_fields if name in output}
    for secret, flag in kind.secret_flags.items():
        values[secret] = SECRET_MASK if output.get(flag) else ""
    return _spec_of(kind, values)
