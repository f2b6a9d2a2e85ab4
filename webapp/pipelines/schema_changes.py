"""Schema changes a pipeline's events show, and the one action that keeps a new field: a column for it.

The job counts, per batch, the events of each Avro writer schema id and the JSON keys no field reads
(`spark_jobs.metrics`); `clearflow_spec.field_changes` turns those records into new, removed and retyped fields
with their effect on the mapping. This module reads the records (the metrics history in Redis) and the writer
schemas (the pipeline's schema registry) for the pipeline page and the API, and adds a column:

`pipeline_field_add_column` checks the new spec first, then runs `ALTER TABLE … ADD COLUMN` on a table the
pipeline engine created (never on one made by hand), then saves a new version mapping the field to it. A running
pipeline is redeployed with that version from its checkpoint (the topics and dedup keys are unchanged), so no
event is lost or written twice across the change. The rows written before it, from events that carried the field,
are filled from those events read again once the new version runs (`webapp.pipelines.column_fill`); the offer
counts them first (the rows written since the field showed, counted in ClickHouse).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from clearflow_spec.clickhouse_types import parse_clickhouse_type, quote_ident
from clearflow_spec.field_changes import FieldChange, field_changes
from clearflow_spec.field_types import default_clickhouse_type
from webapp.core import queue
from webapp.core.exceptions import ApplicationError, ConflictError
from webapp.pipelines import column_fill, metrics_history, services
from webapp.pipelines.mapping import column_name_for
from webapp.pipelines.models import Pipeline

# A JSON key's type is not known from the sample's counts: it is read as text until the user says otherwise.
JSON_KEY_TYPE = "string"


@dataclass(frozen=True)
class SchemaChange:
    """A `FieldChange` with its words and, for a new field, the column one action would add."""

    change: FieldChange
    column: str | None  # new: the column proposed for it
    column_type: str | None  # new: its ClickHouse type (Nullable when events may lack it)
    rows_since: int | None = None  # new: rows written since it showed, which lack it (None: ClickHouse not asked)

    @property
    def message(self) -> str:
        return self.change.message()

    def __getattr__(self, name: str) -> Any:  # kind, path, events, since, effect... read through
        if name == "change":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.change, name)


def _connections(pipeline: Pipeline) -> dict[str, Any]:
    return {
        "kafka_connection": pipeline.kafka_connection,
        "clickhouse_connection": pipeline.clickhouse_connection,
        "schema_registry_connection": pipeline.schema_registry_connection,
    }


def _writer_schemas(pipeline: Pipeline, spec: Any, records: list[dict[str, Any]]) -> dict[int, str]:
    if spec.source.format not in ("avro", "protobuf"):
        return {}
    if spec.source.avro_schema is not None:
        return {0: spec.source.avro_schema}  # plain Avro: the one schema, id 0 in the records
    if pipeline.schema_registry_connection is None:
        return {}
    from webapp.connections import registry_client

    ids = {int(sid) for record in records for sid in (record.get("events_by_schema_id") or {})}
    return registry_client.schemas_by_id(pipeline.schema_registry_connection.client_settings(), ids)


def pipeline_schema_changes(*, pipeline: Pipeline) -> list[SchemaChange]:
    """The fields the events carry that the current version does not read, and the fields it reads that the newest
    writer schema changed, from the metrics history. MetricsUnavailableError when Redis does not answer;
    SchemaRegistryClientError when the registry cannot be asked."""
    if pipeline.spec is None:
        return []
    spec = services.pipeline_validate(spec=pipeline.spec, **_connections(pipeline))
    records = metrics_history.pipeline_metrics_history(pipeline=pipeline, limit=metrics_history.MAX_LIMIT).records
    changes = field_changes(spec, _writer_schemas(pipeline, spec, records), records)
    return [_proposed(pipeline, change) for change in changes]


def _proposed(pipeline: Pipeline, change: FieldChange) -> SchemaChange:
    if change.kind != "new":
        return SchemaChange(change, None, None)
    # The schema's own proposal says Nullable where the schema allows null; the field type's default does not.
    column_type = change.clickhouse_type
    if column_type is None:
        column_type = default_clickhouse_type(change.field_type or JSON_KEY_TYPE)
        if parse_clickhouse_type(column_type).name not in ("Nullable", "Array", "Map", "Tuple", "Nested", "JSON"):
            column_type = f"Nullable({column_type})"  # older events lack it (ClickHouse allows no Nullable(Array))
    rows = None
    if change.since is not None:
        try:
            rows = column_fill.rows_since(pipeline, change.since)
        except ApplicationError:  # ClickHouse does not answer: the offer goes without the count
            rows = None
    return SchemaChange(change, column_name_for(change.path), parse_clickhouse_type(column_type).sql(), rows)


def pipeline_field_add_column(*, pipeline: Pipeline, user: AbstractBaseUser, path: str) -> tuple[Pipeline, str]:
    """Add the new field `path` as a column of the pipeline's table and map it in a new version (see the module's
    doc). Returns the pipeline and the column's name. ValidationError when no such new field is seen;
    ConflictError when the table was not created by the pipeline engine, or has a column of that name already."""
    from webapp.connections import clickhouse_client

    found = next((c for c in pipeline_schema_changes(pipeline=pipeline) if c.kind == "new" and c.path == path), None)
    if found is None or found.column is None or found.column_type is None:
        raise ValidationError({"path": f"No new field `{path}` is seen in the pipeline's events."})
    parsed = services.pipeline_validate(spec=pipeline.spec, **_connections(pipeline))
    sink = parsed.sink
    settings = pipeline.clickhouse_connection.client_settings()
    database, table = sink.clickhouse.database, sink.table
    target = f"{database}.{table}"
    if not clickhouse_client.made_by_clearflow(settings, database=database, table=table):
        # The column's name comes from an event's key: quoted like every identifier, the statement stays one
        # ADD COLUMN whatever a producer put in the key (the type is parsed, see `_proposed`).
        statement = (
            f"ALTER TABLE {quote_ident(database)}.{quote_ident(table)} "
            f"ADD COLUMN {quote_ident(found.column)} {found.column_type}"
        )
        raise ConflictError(
            f"The table {target} was not created by ClearFlow, so ClearFlow does not change it. Add the column "
            f"yourself ({statement}), then map the field to it in the pipeline's mapping step.",
            extra={"column": found.column, "type": found.column_type},
        )
    existing = {c.name for c in clickhouse_client.list_columns(settings, database=database, table=table)}
    if found.column in existing:
        raise ConflictError(
            f"The table {target} already has a column `{found.column}`: map the field `{path}` to it in the "
            "pipeline's mapping step, or rename that column.",
            extra={"column": found.column},
        )
    data = parsed.to_dict()
    data["source"]["fields"].append({"path": path, "type": found.field_type or JSON_KEY_TYPE})
    data["sink"]["columns"].append({"field": path, "column": found.column, "type": found.column_type})
    spec = services.pipeline_validate(spec=data, **_connections(pipeline))  # SpecError before anything changes
    start = column_fill.start_offsets(pipeline, found.since)  # before the new version's batches join the history
    clickhouse_client.add_column(
        settings,
        database=database,
        table=table,
        column=found.column,
        column_type=parse_clickhouse_type(found.column_type),
    )
    pipeline = services.pipeline_update(
        pipeline=pipeline,
        user=user,
        spec=spec,
        note=f"column {found.column} ({found.column_type}) added for the new field {path}",
    )
    version, pipeline_id = pipeline.current_version.number, pipeline.pk
    transaction.on_commit(
        lambda: queue.pipeline_column_fill(
            pipeline_id=pipeline_id, version=version, path=path, column=found.column, since=found.since, start=start
        )
    )
    return pipeline, found.column
