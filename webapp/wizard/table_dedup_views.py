"""The exactly-once check of an existing table, as htmx partials: in the wizard's table step and on the
pipeline page. Each shows the table's guarantee and, when replays would be written twice, the ALTER statement
with a button that runs it (`webapp.pipelines.table_dedup`)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from webapp.core.exceptions import ApplicationError
from webapp.pipelines import selectors as pipeline_selectors
from webapp.pipelines import table_dedup
from webapp.wizard.selectors import draft_get
from webapp.wizard.steps.common import clickhouse_connection_of
from webapp.wizard.steps.table_dedup import insert_dedup_window, table_dedup_context

TEMPLATE = "wizard/partials/table_dedup.html"


@login_required
@require_GET
def draft_table_dedup(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = draft_get(user=request.user, pk=draft_id)
    context = table_dedup_context(
        draft=draft,
        connection=clickhouse_connection_of(request, draft),
        database=request.GET.get("database") or "",
        table=request.GET.get("table") or "",
    )
    return render(request, TEMPLATE, context)


@login_required
@require_POST
def draft_table_dedup_apply(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = draft_get(user=request.user, pk=draft_id)
    connection = clickhouse_connection_of(request, draft)
    database, table = request.POST.get("database") or "", request.POST.get("table") or ""
    error = ""
    if connection is not None and database and table:
        try:
            table_dedup.table_insert_dedup_enable(
                connection=connection, database=database, table=table, window=insert_dedup_window(draft)
            )
        except ApplicationError as exc:
            error = exc.message
    context = table_dedup_context(draft=draft, connection=connection, database=database, table=table)
    if error:
        context["apply_error"] = error
    return render(request, TEMPLATE, context)


@login_required
@require_GET
def pipeline_table_dedup(request: HttpRequest, pk: int) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    result, unknown = table_dedup.pipeline_insert_dedup(pipeline=pipeline)
    return render(request, TEMPLATE, {"pipeline": pipeline, "result": result, "error": unknown})


@login_required
@require_POST
def pipeline_table_dedup_apply(request: HttpRequest, pk: int) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    context: dict = {"pipeline": pipeline}
    try:
        table_dedup.pipeline_table_dedup_enable(pipeline=pipeline)
    except ApplicationError as exc:
        context["apply_error"] = exc.message
    context["result"], context["error"] = table_dedup.pipeline_insert_dedup(pipeline=pipeline)
    return render(request, TEMPLATE, context)
