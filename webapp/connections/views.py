"""The connections pages: list, edit (secrets are never shown: a "change" switch instead), test, delete.

New Kafka and ClickHouse connections are made in the wizard's steps 1 and 7; schema registries (needed only for
Avro topics) are added here, from the wizard's sample step or the connections page. These pages look after all
of them afterwards.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.connections import selectors as conn_selectors
from webapp.connections import services as conn_services
from webapp.connections.forms import SAVE_ANYWAY, connection_data
from webapp.connections.kinds import connection_kind
from webapp.core.exceptions import ApplicationError
from webapp.core.forms import add_validation_errors
from webapp.workspaces import policy
from webapp.workspaces.current import current_workspace


@login_required
@require_GET
def connection_list(request: HttpRequest) -> HttpResponse:
    """The workspace's connections; `?search=` keeps those whose name or address contains the words (the box
    above the lists asks as one types, and the lists alone are swapped)."""
    workspace = current_workspace(request)
    search = request.GET.get("search", "").strip()[:100]
    found = {"user": request.user, "workspace": workspace, "search": search}
    return render(
        request,
        "connections/connection_list.html",
        {
            "search": search,
            "kafka_connections": conn_selectors.kafka_connection_list(**found),
            "clickhouse_connections": conn_selectors.clickhouse_connection_list(**found),
            "schema_registry_connections": conn_selectors.schema_registry_connection_list(**found),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def connection_new(request: HttpRequest, kind: str) -> HttpResponse:
    """A new connection, tested before it is saved (as in the wizard: "Save anyway" when it does not answer).
    `next` (a path on this site) is where to go afterwards, e.g. back to the wizard's sample step."""
    connection_type = connection_kind(kind)
    back = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=False):
        back = ""
    save_anyway = None
    workspace = current_workspace(request)
    if request.method == "POST":
        policy.require(request.user, "connection.create", workspace)
        form = connection_type.form(request.POST, prefix=None)
        if form.is_valid() and request.POST.get("action") != SAVE_ANYWAY:
            outcome = connection_type.test_before_saving(request.user, connection_data(form), form)
            if outcome == "unreachable":
                save_anyway = {"secrets_typed": any(form.cleaned_data.get(name) for name in connection_type.secrets)}
        if form.is_valid():
            try:
                connection = connection_type.create(owner=request.user, data=connection_data(form), workspace=workspace)
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(request, f"Connection {connection.name} saved.")
                return redirect(back or "connections:list")
    else:
        form = connection_type.form(prefix=None)
    return render(
        request,
        "connections/connection_new.html",
        {"kind": kind, "kind_label": connection_type.label, "form": form, "save_anyway": save_anyway, "next": back},
    )


@login_required
@require_http_methods(["GET", "POST"])
def connection_edit(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    connection_type = connection_kind(kind)
    connection = connection_type.get(user=request.user, pk=pk)
    secrets = connection_type.secrets
    save_anyway = None
    if request.method == "POST":
        policy.require(request.user, "connection.edit", connection.workspace_id)
        changing = {name for name in secrets if request.POST.get(f"change_{name}") == "on"}
        if changing:
            policy.require(request.user, "connection.secret", connection.workspace_id)
        data = request.POST.copy()
        for name in secrets:
            if name not in changing:
                # Validate against the stored secret without ever sending it to the browser.
                data[name] = getattr(connection, name)
        form = connection_type.form(data, instance=connection_type.get(user=request.user, pk=pk), prefix=None)
        if form.is_valid() and request.POST.get("action") != SAVE_ANYWAY:
            # As in the wizard: a change that breaks the connection is not saved unless the user says so.
            outcome = connection_type.test_before_saving(request.user, connection_data(form), form)
            if outcome == "unreachable":
                save_anyway = {"secrets_typed": bool(changing)}
        if form.is_valid():  # False once the test above put its error next to a field
            values = connection_data(form, [f for f in form._meta.fields if f not in secrets or f in changing])
            try:
                connection_type.update(connection=connection, data=values, actor=request.user)
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(request, f"Connection {connection.name} saved.")
                return redirect("connections:list")
    else:
        form = connection_type.form(instance=connection, prefix=None)
    return render(
        request,
        "connections/connection_edit.html",
        {
            "kind": kind,
            "kind_label": connection_type.label,
            "connection": connection,
            "save_anyway": save_anyway,
            "form": form,
            "secrets": [
                {
                    "field": form[name],
                    "is_set": bool(getattr(connection, name)),
                    "changing": request.POST.get(f"change_{name}") == "on",
                }
                for name in secrets
            ],
            "other_fields": [form[name] for name in form._meta.fields if name not in secrets],
        },
    )


@login_required
@require_POST
def connection_test(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    connection_type = connection_kind(kind)
    connection = connection_type.get(user=request.user, pk=pk)
    context: dict[str, Any] = {"kind": kind, "c": connection}
    try:
        context["info"] = connection_type.test(connection=connection)
    except ApplicationError as exc:
        context["error"] = exc.message
    return render(request, "connections/partials/connection_test.html", context)


@login_required
@require_POST
def connection_make_default(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    connection = connection_kind(kind).get(user=request.user, pk=pk)
    policy.require(request.user, "connection.edit", connection.workspace_id)
    conn_services.connection_make_default(connection=connection, actor=request.user)
    messages.success(request, f"{connection.name} is now the default: the wizard preselects it.")
    return redirect("connections:list")


@login_required
@require_POST
def connection_delete(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    connection_type = connection_kind(kind)
    connection = connection_type.get(user=request.user, pk=pk)
    policy.require(request.user, "connection.delete", connection.workspace_id)
    try:
        connection_type.delete(connection=connection, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Connection {connection.name} deleted.")
    return redirect("connections:list")
