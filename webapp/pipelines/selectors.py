"""Reads of pipelines and their versions. `*_get` raise Http404 for missing or other people's objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import Count, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from webapp.connections import clickhouse_client
from webapp.connections.models import ClickHouseConnection
from webapp.pipelines import metrics, runtime
from webapp.pipelines.mapping import MappingSuggestion, SourceField, suggest_mapping
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineStatus, PipelineTransition, PipelineVersion


def pipeline_list(*, user: AbstractBaseUser) -> QuerySet[Pipeline]:
    """The user's pipelines by name, with their connections and current version loaded."""
    return (
        Pipeline.objects.filter(owner=user)
        .select_related("kafka_connection", "clickhouse_connection", "current_version", "deployed_version")
        .order_by("name", "id")
    )


def pipeline_get(*, user: AbstractBaseUser, pk: Any) -> Pipeline:
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        raise Http404("No such pipeline.") from None
    return get_object_or_404(pipeline_list(user=user), pk=pk)


def pipeline_version_list(*, pipeline: Pipeline) -> QuerySet[PipelineVersion]:
    """Every version of the pipeline, newest first."""
    return PipelineVersion.objects.filter(pipeline=pipeline).select_related("created_by").order_by("-number")


def pipeline_version_get(*, pipeline: Pipeline, number: Any) -> PipelineVersion:
    try:
        number = int(number)
    except (TypeError, ValueError):
        raise Http404("No such version.") from None
    return get_object_or_404(pipeline_version_list(pipeline=pipeline), number=number)


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
    batch. Each is a JSON object with the fields of `spark_jobs.metrics.BatchMetrics` (`input_rows`,
    `rows_written`, `duplicates_dropped`, `total_lag`, ...). Raises MetricsUnavailableError (Redis down)."""
    return metrics.recent_records(pipeline.job_name, limit=limit)


def pipeline_run_list(*, pipeline: Pipeline) -> QuerySet[PipelineRun]:
    """Every attempt to run the pipeline's job, newest first."""
    return PipelineRun.objects.filter(pipeline=pipeline).select_related("version").order_by("-started_at", "-id")


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
