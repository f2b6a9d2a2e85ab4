"""Reads of pipelines and their versions. `*_get` raise Http404 for missing objects and those of workspaces the
user is not in."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import Count, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from clearflow_spec.connections import spec_without_connections
from clearflow_spec.spec import SpecError
from webapp.connections import clickhouse_client
from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection
from webapp.core.changes import Change, json_changes
from webapp.pipelines import metrics, runtime, stored_specs
from webapp.pipelines.lifecycle import JOB_WANTED
from webapp.pipelines.mapping import MappingSuggestion, SourceField, suggest_mapping
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineStatus, PipelineTransition, PipelineVersion
from webapp.pipelines.spec_field import load_spec, stored_json
from webapp.workspaces.models import Workspace
from webapp.workspaces.policy import visible_workspaces


def pipeline_list(
    *, user: AbstractBaseUser, name: str | None = None, workspace: Workspace | None = None
) -> QuerySet[Pipeline]:
    """The pipelines of the user's workspaces by name (only `workspace`'s, only the one called `name`, when
    given), with their connections and current version loaded."""
    pipelines = Pipeline.objects.filter(workspace__in=visible_workspaces(user))
    if workspace is not None:
        pipelines = pipelines.filter(workspace=workspace)
    if name is not None:
        pipelines = pipelines.filter(name=name)
    return pipelines.select_related(
        "kafka_connection", "clickhouse_connection", "schema_registry_connection", "current_version", "deployed_version"
    ).order_by("name", "id")


def pipeline_get(*, user: AbstractBaseUser, pk: Any) -> Pipeline:
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        raise Http404("No such pipeline.") from None
    try:
        return pipeline_list(user=user).get(pk=pk)
    except Pipeline.DoesNotExist:
        raise Http404(f"You have no pipeline {pk}: it was deleted, or it belongs to another user.") from None


def pipeline_version_list(*, pipeline: Pipeline) -> QuerySet[PipelineVersion]:
    """Every version of the pipeline, newest first."""
    return PipelineVersion.objects.filter(pipeline=pipeline).select_related("created_by").order_by("-number")


def pipeline_version_get(*, pipeline: Pipeline, number: Any) -> PipelineVersion:
    try:
        number = int(number)
    except (TypeError, ValueError):
        raise Http404("No such version.") from None
    return get_object_or_404(pipeline_version_list(pipeline=pipeline), number=number)


@dataclass(frozen=True)
class PipelineChanges:
    """What saving a spec (and connections) as the pipeline's new version would change."""

    # Paths `kafka_connection`, `clickhouse_connection`, `schema_registry_connection`, `spec.…`.
    changes: list[Change] = field(default_factory=list)
    redeploys: bool = False  # the pipeline runs or is being deployed: saving the change redeploys it
    checkpoint_problems: list[str] = field(default_factory=list)  # why the change cannot use the checkpoint

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def _comparable(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A stored spec as it would be stored today (old field names read), without its connections' details: those
    belong to the connections, and a version made before a connection was edited still holds the old ones."""
    with contextlib.suppress(SpecError):  # a spec from before a rule existed is compared as it is
        stored = load_spec(stored).to_dict()
    return spec_without_connections(stored)


def pipeline_changes(
    *,
    pipeline: Pipeline,
    spec: Mapping[str, Any],
    kafka_connection: KafkaConnection | None = None,
    clickhouse_connection: ClickHouseConnection | None = None,
    schema_registry_connection: SchemaRegistryConnection | None = None,
    version: PipelineVersion | None = None,
) -> PipelineChanges:
    """Compare `spec` (a client's spec, as `services.pipeline_update` takes it) and the connections with the
    pipeline's current version (or `version`: the wizard's review compares with the one running). Raises SpecError
    for a spec that update would refuse."""
    kafka = kafka_connection or pipeline.kafka_connection
    clickhouse = clickhouse_connection or pipeline.clickhouse_connection
    registry = stored_specs.registry_after_update(
        current=pipeline.schema_registry_connection, given=schema_registry_connection, spec=spec
    )
    parsed = stored_specs.parse(
        spec,
        name=pipeline.name,
        kafka_connection=kafka,
        clickhouse_connection=clickhouse,
        schema_registry_connection=registry,
    )
    changes = [
        Change(name, getattr(old, "name", None), getattr(new, "name", None))
        for name, old, new in (
            ("kafka_connection", pipeline.kafka_connection, kafka),
            ("clickhouse_connection", pipeline.clickhouse_connection, clickhouse),
            ("schema_registry_connection", pipeline.schema_registry_connection, registry),
        )
        if getattr(old, "pk", None) != getattr(new, "pk", None)
    ]
    base = version.stored_spec if version is not None else pipeline.stored_spec
    changes += json_changes(_comparable(base or {}), _comparable(stored_json(parsed)), "spec")
    problems: list[str] = []
    if changes and pipeline.deployed_version is not None and pipeline.runs.exists():
        try:
            deployed = pipeline.deployed_version.spec
        except SpecError as exc:
            problems = [f"the deployed version's spec no longer reads ({exc.errors[0]})"]
        else:
            problems = stored_specs.checkpoint_incompatibilities(deployed, parsed)
    redeploys = bool(changes) and pipeline.status in JOB_WANTED
    return PipelineChanges(changes=changes, redeploys=redeploys, checkpoint_problems=problems)


def pipeline_mapping_suggest(
    *,
    fields: Sequence[SourceField],
    clickhouse_connection: ClickHouseConnection | None = None,
    database: str | None = None,
    table: str | None = None,
    order_by: Sequence[str] = (),
) -> MappingSuggestion:
    """Columns for the fields: into an existing `database.table` (read from ClickHouse), or for a new table
    (ORDER BY the fields `order_by`) when `table` is None or does not exist yet (the create-table path, as in
    the wizard; `create_table` says which). Raises ClickHouseClientError when ClickHouse cannot tell (down,
    refused), ClickHouseNotFoundError for a database that does not exist."""
    columns = None
    if table is not None and clickhouse_connection is not None:
        in_database = database or clickhouse_connection.database
        try:
            columns = clickhouse_client.list_columns(
                clickhouse_connection.client_settings(), database=in_database, table=table
            )
        except clickhouse_client.ClickHouseNotFoundError:
            # The job creates the table (spec.sink.create_table), but not its database: that must exist.
            if in_database not in clickhouse_client.list_databases(clickhouse_connection.client_settings()):
                raise clickhouse_client.ClickHouseNotFoundError(
                    f"The database {in_database} does not exist: create it, or choose another."
                ) from None
    return suggest_mapping(fields, columns, order_by=order_by)


def pipeline_metrics(*, pipeline: Pipeline, limit: int = 60) -> list[dict[str, Any]]:
    """Up to `limit` recent metrics records of the pipeline's Spark job, oldest first; `[]` before the first
    batch. Each is a JSON object with the fields of `clearflow_spec.protocol.BatchMetrics` (`input_rows`,
    `rows_written`, `duplicates_dropped`, `total_lag`, ...). Raises MetricsUnavailableError (Redis down)."""
    return metrics.recent_records(pipeline.job_name, limit=limit)


def pipeline_run_list(*, pipeline: Pipeline) -> QuerySet[PipelineRun]:
    """Every attempt to run the pipeline's job, newest first."""
    return PipelineRun.objects.filter(pipeline=pipeline).select_related("version").order_by("-started_at", "-id")


def pipeline_run_active(*, pipeline: Pipeline) -> PipelineRun | None:
    """The run whose job is alive (not ended), if any."""
    return pipeline_run_list(pipeline=pipeline).filter(ended_at__isnull=True).first()


def pipeline_transition_list(*, pipeline: Pipeline) -> QuerySet[PipelineTransition]:
    """The pipeline's status changes, newest first."""
    return PipelineTransition.objects.filter(pipeline=pipeline).order_by("-at", "-id")


def pipeline_log(*, pipeline: Pipeline, lines: int = 100) -> list[str]:
    """The last lines of the pipeline's job log (the latest run), secrets redacted by the worker.
    Raises MetricsUnavailableError (Redis down)."""
    return runtime.job_log(pipeline.job_name, lines=lines)


def pipeline_status_counts() -> dict[str, int]:
    """How many pipelines (of everyone) are in each status."""
    counts = {status.value: 0 for status in PipelineStatus}
    for row in Pipeline.objects.values("status").annotate(n=Count("id")):
        counts[row["status"]] = row["n"]
    return counts


def pipeline_monitoring_list() -> QuerySet[Pipeline]:
    """Every pipeline (of everyone) with its owner, by id: what the operator's `/metrics` scrape reports."""
    return Pipeline.objects.select_related("owner").order_by("id")
