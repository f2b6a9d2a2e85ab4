"""A saved pipeline as pipeline-file documents: its connections and itself, secrets as ${ENV_VAR} references.

Applying the export gives "unchanged": the spec is written without what its connections give, settings that are
not set are left out (null and empty lists mean the same as leaving them out), and a secret's variable that is
not set keeps the saved secret. Everything else is written out, defaults included: the file says what runs.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any

import yaml

from clearflow.documents import CLICKHOUSE, KAFKA, PIPELINE, SCHEMA_REGISTRY, ConnectionKind
from clearflow.env_references import ENV_KEY
from clearflow_spec.connections import spec_without_connections
from clearflow_spec.spec import SpecError, parse_spec


def env_name(connection: str, field: str) -> str:
    """The variable a secret is read from: `local clickhouse` + `password` -> `LOCAL_CLICKHOUSE_PASSWORD`."""
    base = re.sub(r"[^A-Za-z0-9]+", "_", connection).strip("_").upper()
    if not base or base[0].isdigit():
        base = f"CONNECTION_{base}".rstrip("_")
    return f"{base}_{field.upper()}"


def connection_document(kind: ConnectionKind, saved: Mapping[str, Any]) -> dict[str, Any]:
    """A connection document from the API's connection: no secret, ever; `${VAR}` where one is set, the variable
    declared in `env`; a `$` in any other value written `$$` (apply reads it back as it was)."""
    document: dict[str, Any] = {"kind": kind.kind, "name": saved["name"]}
    variables: list[str] = []
    for name, info in kind.model.model_fields.items():
        if name in kind.secrets:
            if saved.get(kind.secret_flags[name]):
                variables.append(env_name(saved["name"], name))
                document[name] = "${" + variables[-1] + "}"
            continue
        value = saved.get(name)
        if value is not None and not (value == "" and info.get_default() is None):  # "" is how it stores "not set"
            document[name] = value.replace("$", "$$") if isinstance(value, str) else value
    if variables:
        document[ENV_KEY] = variables
    return document


def _pruned(value: Any) -> Any:
    """Objects without keys whose value is null or an empty list: the spec reads them as their defaults."""
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v is not None and v != []}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def pipeline_document(
    saved: Mapping[str, Any],
    *,
    kafka_connection: str,
    clickhouse_connection: str,
    schema_registry_connection: str | None = None,
) -> dict[str, Any]:
    stored = saved.get("spec") or {}
    # Read through the spec's model: its fields in their order (the server's database keeps JSON keys in its own).
    with contextlib.suppress(SpecError):  # a spec from before a rule existed is written as it is
        stored = parse_spec(stored).to_dict()
    spec = spec_without_connections(stored)
    spec.pop("version", None)
    spec.pop("name", None)
    document: dict[str, Any] = {
        "kind": PIPELINE,
        "name": saved["name"],
        "kafka_connection": kafka_connection,
        "clickhouse_connection": clickhouse_connection,
    }
    if schema_registry_connection is not None:
        document["schema_registry_connection"] = schema_registry_connection
    return {**document, "spec": _pruned(spec)}


def export_documents(
    pipeline: Mapping[str, Any],
    *,
    kafka: Mapping[str, Any],
    clickhouse: Mapping[str, Any],
    schema_registry: Mapping[str, Any] | None = None,
    connections: bool = True,
) -> list[dict[str, Any]]:
    """The documents of a pipeline (API answers of the pipeline and its connections: Kafka, ClickHouse, and the
    schema registry when it has one)."""
    saved = [(KAFKA, kafka), (CLICKHOUSE, clickhouse)]
    if schema_registry is not None:
        saved.append((SCHEMA_REGISTRY, schema_registry))
    documents = [connection_document(kind, answer) for kind, answer in saved] if connections else []
    names = {kind.pipeline_field: answer["name"] for kind, answer in saved}
    return [*documents, pipeline_document(pipeline, **names)]


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line text (PEM certificates), lists indented under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def to_yaml(documents: list[dict[str, Any]]) -> str:
    """The documents as one YAML file, with a comment naming the variables its secrets are read from."""
    variables = [
        (match.group(1), document["kind"], document["name"], key)
        for document in documents
        for key, value in document.items()
        if isinstance(value, str) and (match := _REFERENCE.fullmatch(value))
    ]
    header = ""
    if variables:
        header = "# Secrets are not exported. `clearflow apply` reads them from these environment variables (a\n"
        header += "# variable that is not set keeps the secret the server has):\n"
        header += "".join(f"#   {var}: {kind} {name!r}, {key}\n" for var, kind, name, key in variables)
    body = yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, allow_unicode=True, explicit_start=True)
    return header + body
