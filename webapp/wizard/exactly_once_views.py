"""The table step's exactly-once check of an existing table (htmx partials): does it drop a replayed insert?
When it would write a replay twice, the partial shows the ALTER statement with a button that runs it
(`webapp.pipelines.exactly_once`). The pipeline page shows the same partial (`webapp.pipelines.views`)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from webapp.core.exceptions import ApplicationError
from webapp.pipelines import exactly_once
from webapp.wizard.selectors import draft_get
from webapp.wizard.steps.common import clickhouse_connection_of
from webapp.wizard.steps.exactly_once import TEMPLATE, exactly_once_context, insert_dedup_window
from webapp.workspaces import policy


@login_required
@require_GET
def exactly_once_check(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = draft_get(user=request.user, pk=draft_id)
    context = exactly_once_context(
        draft=draft,
        connection=clickhouse_connection_of(request, draft),
        database=request.GET.get("database") or "",
        table=request.GET.get("table") or "",
    )
    return render(request, TEMPLATE, context)


@login_required
@require_POST
def exactly_once_apply(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = draft_get(user=request.user, pk=draft_id)
    connection = clickhouse_connection_of(request, draft)
    database, table = request.POST.get("database") or "", request.POST.get("table") or ""
    error = ""
    if connection is not None and database and table:
        policy.require(request.user, "pipeline.edit", connection.workspace_id)  # an ALTER TABLE on the server
        try:
            exactly_once.table_insert_dedup_enable(
                connection=connection, database=database, table=table, window=insert_dedup_window(draft)
            )
        except ApplicationError as exc:
            error = exc.message
    context = exactly_once_context(draft=draft, connection=connection, database=database, table=table)
    if error:
        context["apply_error"] = error
    return render(request, TEMPLATE, context)
