"""Checking a pipeline document's spec with the server's own model (`clearflow_spec.spec`): the spec as the
server would check it, and its problems with the API's paths."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from clearflow.documents import PipelineDocument
from clearflow.errors import ErrorItem
from clearflow_spec.connections import connection_dict, spec_with_connections
from clearflow_spec.spec import SpecError, parse_spec, version_for


def api_path(spec_path: str) -> str:
    """A spec issue's path as the API writes it: under `spec`, except the name (the document's own)."""
    if spec_path == "name":
        return "name"
    if not spec_path:
        return "spec"
    return f"spec{spec_path}" if spec_path.startswith("[") else f"spec.{spec_path}"


def full_spec(
    pipeline: PipelineDocument, *, kafka: BaseModel, clickhouse: BaseModel, schema_registry: BaseModel | None = None
) -> dict[str, Any]:
    """The spec as the server would check it: version, name and the connections' sections (secrets masked)."""
    data = {**pipeline.spec, "version": pipeline.spec.get("version", version_for(pipeline.spec)), "name": pipeline.name}
    registry = connection_dict(schema_registry, reveal_secrets=False) if schema_registry is not None else None
    return spec_with_connections(
        data,
        kafka=connection_dict(kafka, reveal_secrets=False),
        clickhouse=connection_dict(clickhouse, reveal_secrets=False),
        schema_registry=registry,
    )


def spec_issues(
    pipeline: PipelineDocument, *, kafka: BaseModel, clickhouse: BaseModel, schema_registry: BaseModel | None = None
) -> list[ErrorItem]:
    """Every problem `clearflow_spec.spec` finds in the pipeline's spec, with the API's paths ([] when valid)."""
    try:
        parse_spec(full_spec(pipeline, kafka=kafka, clickhouse=clickhouse, schema_registry=schema_registry))
    except SpecError as exc:
        return [ErrorItem(api_path(issue.path), issue.message, pipeline.where) for issue in exc.errors]
    return []
