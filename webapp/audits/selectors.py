"""Reads of audited tables and their results. `*_get` raise Http404 for missing objects and other workspaces'.

`latest_result_for_pipeline` and `latest_result` are the interface the alerts build on: keep their names.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import Q, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from webapp.audits.models import HOUR_SECONDS, AuditedTable, AuditResult
from webapp.workspaces.models import Workspace
from webapp.workspaces.policy import visible_workspaces


def latest_result(*, audited_table_id: int, window_seconds: int = HOUR_SECONDS) -> AuditResult | None:
    """The newest check of the table over `window_seconds` (the last hour by default), None before the first."""
    return (
        AuditResult.objects.filter(audited_table_id=audited_table_id, window_seconds=window_seconds)
        .select_related("audited_table")
        .order_by("-checked_at", "-id")
        .first()
    )


def latest_result_for_pipeline(*, pipeline_id: int) -> AuditResult | None:
    """The newest 1-hour check of the pipeline's table; None when it has none (yet)."""
    table_id = AuditedTable.objects.filter(pipeline_id=pipeline_id).values_list("id", flat=True).first()
    return None if table_id is None else latest_result(audited_table_id=table_id)


def latest_results(*, audited_table: AuditedTable) -> list[AuditResult]:
    """The newest check of each of the table's windows, the hour first (windows never checked left out)."""
    found = (latest_result(audited_table_id=audited_table.pk, window_seconds=w) for w in audited_table.windows)
    return [result for result in found if result is not None]


def audited_table_list(*, user: AbstractBaseUser, workspace: Workspace | None = None) -> QuerySet[AuditedTable]:
    """The audited tables of the user's workspaces (their pipelines' and those added by hand; only `workspace`'s,
    when given)."""
    tables = AuditedTable.objects.filter(workspace__in=visible_workspaces(user))
    if workspace is not None:
        tables = tables.filter(workspace=workspace)
    return tables.select_related("connection", "pipeline").order_by("database", "table", "id")


def audited_table_get(*, user: AbstractBaseUser, pk: Any) -> AuditedTable:
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        raise Http404("No such audited table.") from None
    return get_object_or_404(audited_table_list(user=user), pk=pk)


def audited_table_of_pipeline(*, pipeline: Any) -> AuditedTable | None:
    """The pipeline's own audited table (None before its first run, or without dedup keys)."""
    return AuditedTable.objects.filter(pipeline=pipeline).select_related("connection", "pipeline").first()


def audited_table_for_check(*, pk: int) -> AuditedTable | None:
    """An audited table with its connection, for the worker's check; None when it is gone."""
    return AuditedTable.objects.select_related("connection").filter(pk=pk).first()


def audit_result_list(*, audited_table: AuditedTable) -> QuerySet[AuditResult]:
    """The table's checks, newest first."""
    return AuditResult.objects.filter(audited_table=audited_table).order_by("-checked_at", "-id")


def audited_table_ids_due() -> list[int]:
    """Every audited table the periodic check covers: hand-added ones, and those of running pipelines."""
    from webapp.pipelines.models import PipelineStatus

    running = Q(pipeline__isnull=True) | Q(pipeline__status=PipelineStatus.RUNNING)
    return list(AuditedTable.objects.filter(running).order_by("id").values_list("id", flat=True))


def audit_due_at_start(*, audited_table: AuditedTable) -> bool:
    """Whether a pipeline's table, as its job starts, has no check since it was added or last changed (new
    keys, another table): then it is checked at once instead of at the next round."""
    return not AuditResult.objects.filter(
        audited_table=audited_table, checked_at__gte=audited_table.updated_at
    ).exists()


def latest_pipeline_results() -> dict[int, AuditResult]:
    """pipeline id -> its newest 1-hour check, for every pipeline that has one (what `/metrics` reports)."""
    results: dict[int, AuditResult] = {}
    rows = (
        AuditResult.objects.filter(audited_table__pipeline__isnull=False, window_seconds=HOUR_SECONDS)
        .order_by("audited_table_id", "-checked_at", "-id")
        .distinct("audited_table_id")
        .select_related("audited_table")
    )
    for result in rows:
        results[result.audited_table.pipeline_id] = result
    return results
