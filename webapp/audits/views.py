"""The Audits pages (the user's audited tables, add one by hand, a table's results) and the proof partial that
the pipeline page loads with htmx. Plain function views: selectors find the user's objects (404 otherwise)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.audits import selectors, services
from webapp.audits.forms import AuditedTableForm
from webapp.audits.proof import pipeline_proof_context
from webapp.connections.selectors import clickhouse_connection_list
from webapp.core.exceptions import ApplicationError
from webapp.pipelines.selectors import pipeline_get
from webapp.workspaces import policy
from webapp.workspaces.current import current_workspace

RESULTS_SHOWN = 100


@login_required
@require_http_methods(["GET", "POST"])
def audit_list(request: HttpRequest) -> HttpResponse:
    workspace = current_workspace(request)
    connections = clickhouse_connection_list(user=request.user, workspace=workspace)
    form = AuditedTableForm(request.POST or None, connections=connections)
    if request.method == "POST":
        policy.require(request.user, "audit.edit", workspace)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        connection = data.pop("connection")
        try:
            audited = services.audited_table_create(
                owner=request.user,
                workspace=workspace,
                connection=connection,
                database=data["database"] or connection.database,
                table=data["table"],
                key_columns=data["key_columns"],
                time_column=data["time_column"],
                extra_window_seconds=data["extra_window"],
            )
        except ValidationError as exc:
            for name, errors in exc.message_dict.items():
                form.add_error(name if name in form.fields else None, errors)
        except ApplicationError as exc:  # ClickHouse did not answer
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"{audited} is audited from the next round on.")
            return redirect("audits:audit_detail", pk=audited.pk)
    tables = list(selectors.audited_table_list(user=request.user, workspace=workspace))
    for audited in tables:
        audited.latest = selectors.latest_results(audited_table=audited)
    return render(request, "audits/audit_list.html", {"tables": tables, "form": form})


@login_required
@require_GET
def audit_detail(request: HttpRequest, pk: int) -> HttpResponse:
    audited = selectors.audited_table_get(user=request.user, pk=pk)
    results = selectors.audit_result_list(audited_table=audited)[:RESULTS_SHOWN]
    return render(
        request,
        "audits/audit_detail.html",
        {"audited": audited, "results": results, "latest": selectors.latest_results(audited_table=audited)},
    )


@login_required
@require_POST
def audit_delete(request: HttpRequest, pk: int) -> HttpResponse:
    audited = selectors.audited_table_get(user=request.user, pk=pk)
    policy.require(request.user, "audit.edit", audited.workspace_id)
    try:
        services.audited_table_delete(audited_table=audited, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("audits:audit_detail", pk=audited.pk)
    messages.success(request, f"{audited} is no longer audited.")
    return redirect("audits:audit_list")


@login_required
@require_GET
def pipeline_proof(request: HttpRequest, pk: int) -> HttpResponse:
    """The pipeline page's proof panel (a partial, polled by htmx)."""
    pipeline = pipeline_get(user=request.user, pk=pk)
    return render(request, "audits/partials/pipeline_proof.html", pipeline_proof_context(pipeline=pipeline))
