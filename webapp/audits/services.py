"""Writes for duplicate audits: add a table by hand, keep pipelines' tables in step, run a check, prune.

A check (`audit_check`) runs the audit query once per window and stores one `AuditResult` each. ClickHouse
errors that may pass (network, overload: `ClickHouseClientError.transient`) are raised for the Celery task to
retry, unless `record_transient` says this is the last attempt; any other error is stored with the result, so
the page, the API and the alerts see a failing audit.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from clearflow_spec.clickhouse_types import quote_ident
from clearflow_spec.spec import PipelineSpec, SpecError
from spark_jobs.sink import INGESTED_AT_COLUMN, INGESTED_AT_TYPE
from webapp.activity.services import activity_record, snapshot
from webapp.audits import queries
from webapp.audits.models import AuditedTable, AuditResult
from webapp.connections import clickhouse_client
from webapp.connections.clickhouse_client import ClickHouseClientError, ClickHouseNotFoundError
from webapp.connections.models import ClickHouseConnection
from webapp.core.exceptions import ApplicationError
from webapp.pipelines.models import Pipeline, PipelineStatus
from webapp.workspaces.models import Workspace
from webapp.workspaces.services import workspace_for_new_objects

logger = logging.getLogger(__name__)


@transaction.atomic
def audited_table_create(
    *,
    owner: AbstractBaseUser,
    connection: ClickHouseConnection,
    database: str,
    table: str,
    key_columns: list[str],
    time_column: str,
    extra_window_seconds: int | None = None,
    workspace: Workspace | None = None,
) -> AuditedTable:
    """A table added by hand to the periodic audit, in `workspace` (the owner's default one when None), with a
    connection of that workspace only."""
    audited = AuditedTable(
        owner=owner,
        workspace=workspace_for_new_objects(user=owner, workspace=workspace),
        connection=connection,
        database=database,
        table=table,
        key_columns=list(key_columns),
        time_column=time_column,
        extra_window_seconds=extra_window_seconds,
    )
    audited.full_clean()
    _check_columns(audited)
    audited.save()
    activity_record(actor=owner, action="audit.create", target=audited, after=_snapshot(audited))
    return audited


def _snapshot(audited: AuditedTable) -> dict[str, Any]:
    return snapshot(audited, ["connection", "database", "table", "key_columns", "time_column", "extra_window_seconds"])


def _check_columns(audited: AuditedTable) -> None:
    """The table and the columns must exist, the time column must hold times. Raises ValidationError naming
    the field, or ClickHouseClientError (server down: API 502)."""
    try:
        listed = clickhouse_client.list_columns(
            audited.connection.client_settings(), database=audited.database, table=audited.table
        )
    except ClickHouseNotFoundError as exc:
        raise ValidationError({"table": exc.message}) from None
    columns = {c.name: c.type for c in listed}
    missing = [k for k in audited.key_columns if k not in columns]
    if missing:
        raise ValidationError({"key_columns": f"{audited} has no column {', '.join(missing)}."})
    time_type = columns.get(audited.time_column)
    if time_type is None:
        raise ValidationError({"time_column": f"{audited} has no column {audited.time_column}."})
    if "Date" not in time_type:
        raise ValidationError({"time_column": f"{audited.time_column} is a {time_type}, not a date or time column."})


@transaction.atomic
def audited_table_delete(*, audited_table: AuditedTable, actor: Any = None) -> None:
    """Stop auditing a hand-added table (its results go with it). A pipeline's own audit stays."""
    if audited_table.pipeline_id is not None:
        raise ApplicationError("A pipeline's own table is audited as long as the pipeline runs.")
    activity_record(actor=actor, action="audit.delete", target=audited_table, before=_snapshot(audited_table))
    audited_table.delete()


def pipeline_audit_target(spec: PipelineSpec) -> dict[str, Any] | None:
    """What to audit for a pipeline's spec: its table, the columns its dedup keys map to, and the ingestion-time
    column (or, for a table ClearFlow did not create, a mapped Kafka timestamp if there is one). None when the
    spec has no dedup keys or a key is not written to any column: nothing to check."""
    sink, dedup = spec.sink, spec.dedup
    if dedup is None:
        return None
    column_of: dict[str, str] = {}
    for column in sink.columns:
        column_of.setdefault(column.field, column.column)
    if any(key not in column_of for key in dedup.keys):
        return None
    time_column = INGESTED_AT_COLUMN
    if not sink.create_table and "_kafka_timestamp" in column_of:
        time_column = column_of["_kafka_timestamp"]
    return {
        "database": sink.clickhouse.database,
        "table": sink.table,
        "key_columns": [column_of[key] for key in dedup.keys],
        "time_column": time_column,
        "extra_window_seconds": dedup.window_seconds,
    }


@transaction.atomic
def audited_table_sync_pipeline(*, pipeline: Pipeline) -> AuditedTable | None:
    """Create or update the pipeline's own audited table from the spec it runs (None: nothing to audit)."""
    version = pipeline.deployed_version or pipeline.current_version
    connection = pipeline.clickhouse_connection
    try:
        target = pipeline_audit_target(version.spec) if version else None
    except SpecError:  # a spec today's rules refuse: its pipeline cannot run either
        target = None
    if target is None:
        return None
    wanted = {
        "owner_id": pipeline.owner_id,
        "workspace_id": pipeline.workspace_id,
        "connection_id": connection.pk,
        **target,
    }
    audited = AuditedTable.objects.filter(pipeline=pipeline).first()
    if audited is None:
        return AuditedTable.objects.create(pipeline=pipeline, **wanted)
    changed = {name: value for name, value in wanted.items() if getattr(audited, name) != value}
    if changed:  # only when the deployed spec changed: every round calls this for every running pipeline
        for name, value in changed.items():
            setattr(audited, name, value)
        audited.save(update_fields=[*changed, "updated_at"])
    return audited


def audited_tables_sync_pipelines() -> int:
    """Every running pipeline gets (or keeps in step) its audited table. Returns how many are audited."""
    synced = 0
    running = Pipeline.objects.filter(status=PipelineStatus.RUNNING).select_related(
        "clickhouse_connection", "deployed_version", "current_version"
    )
    for pipeline in running:
        if audited_table_sync_pipeline(pipeline=pipeline) is not None:
            synced += 1
    return synced


def audit_check(*, audited_table: AuditedTable, record_transient: bool = True) -> list[AuditResult]:
    """Count the duplicate keys of each window (the hour, then the dedup window) and store the results.

    Raises ClickHouseClientError for a transient error unless `record_transient` (then it is stored too)."""
    max_seconds = int(settings.AUDIT_MAX_EXECUTION_SECONDS)
    sql = queries.duplicate_sql(
        database=audited_table.database,
        table=audited_table.table,
        key_columns=list(audited_table.key_columns),
        time_column=audited_table.time_column,
        max_execution_time=max_seconds,
        max_rows_per_second=int(settings.AUDIT_MAX_ROWS_PER_SECOND),
    )
    pending: list[AuditResult] = []
    for window in audited_table.windows:
        result = AuditResult(
            audited_table=audited_table,
            checked_at=timezone.now(),
            window_seconds=window,
            query=queries.runnable_sql(sql, window_seconds=window),
        )
        try:
            # The HTTP timeout leaves the server room to stop the query itself (max_execution_time) first.
            count = queries.count_duplicates(
                audited_table.connection.client_settings(), sql=sql, window_seconds=window, timeout=max_seconds + 10
            )
        except ClickHouseClientError as exc:
            # The server's time limit is not retried: the same rows take the same time again.
            out_of_time = exc.server_code == clickhouse_client.QUERY_TIME_LIMIT_CODE
            if exc.transient and not record_transient and not out_of_time:
                raise
            result.error = _explained(str(exc), audited_table, window_seconds=window, out_of_time=out_of_time)
            logger.info("audit of %s failed: %s", audited_table, result.error)
        except ApplicationError as exc:  # e.g. the connection's host is now in a forbidden network
            result.error = exc.message
        else:
            result.duplicate_keys = count.duplicate_keys
            result.duplicate_rows = count.duplicate_rows
            result.elapsed_ms = count.elapsed_ms
        pending.append(result)
    with transaction.atomic():
        return AuditResult.objects.bulk_create(pending)


def _explained(error: str, audited_table: AuditedTable, *, window_seconds: int, out_of_time: bool) -> str:
    """ClickHouse's error, with the fix when the ingestion-time column is missing (a table made elsewhere) or
    when the window holds more rows than the throttled check reads within its time."""
    if out_of_time:
        max_seconds = int(settings.AUDIT_MAX_EXECUTION_SECONDS)
        per_second = int(settings.AUDIT_MAX_ROWS_PER_SECOND)
        if per_second > 0:
            return (
                f"{error}\nThe check of the last {window_seconds} s did not finish within {max_seconds} s: it reads "
                f"at most {per_second:,} rows a second, so it covers about {per_second * max_seconds:,} rows. "
                "Raise CLEARFLOW_AUDIT_MAX_EXECUTION (keep it below CLEARFLOW_AUDIT_INTERVAL) or "
                "CLEARFLOW_AUDIT_MAX_ROWS_PER_SECOND (the check then takes more of the server's cores at once)."
            )
        return (
            f"{error}\nThe check of the last {window_seconds} s did not finish within {max_seconds} s. "
            "Raise CLEARFLOW_AUDIT_MAX_EXECUTION (keep it below CLEARFLOW_AUDIT_INTERVAL)."
        )
    missing = "Code: 47" in error or "UNKNOWN_IDENTIFIER" in error or "Missing columns" in error
    if missing and audited_table.time_column == INGESTED_AT_COLUMN:
        name = f"{quote_ident(audited_table.database)}.{quote_ident(audited_table.table)}"
        return (
            f"{error}\nThe table has no ingestion-time column. Add one (existing rows get the time of the ALTER): "
            f"ALTER TABLE {name} ADD COLUMN {quote_ident(INGESTED_AT_COLUMN)} {INGESTED_AT_TYPE}"
        )
    return error


def audit_results_prune(*, now: Any = None) -> int:
    """Delete results older than AUDIT_RESULT_RETENTION_DAYS. Returns how many went."""
    cutoff = (now or timezone.now()) - timedelta(days=int(settings.AUDIT_RESULT_RETENTION_DAYS))
    deleted, _ = AuditResult.objects.filter(checked_at__lt=cutoff).delete()
    return deleted
