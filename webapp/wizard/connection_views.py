"""The saved connections: list, edit (secrets are never shown: a "change" switch instead), test, delete.

New Kafka and ClickHouse connections are made in the wizard's steps 1 and 6; schema registries (needed only for
Avro topics) are added here, from the wizard's sample step or the connections page. This page looks after all of
them afterwards.
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
from webapp.core.exceptions import ApplicationError
from webapp.wizard.connection_kinds import connection_data, connection_kind
from webapp.wizard.steps.common import add_validation_errors
from webapp.wizard.steps.connection import SAVE_ANYWAY, test_before_saving


@login_required
@require_GET
def connection_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "wizard/connection_list.html",
        {
            "kafka_connections": conn_selectors.kafka_connection_list(user=request.user),
            "clickhouse_connections": conn_selectors.clickhouse_connection_list(user=request.user),
            "schema_registry_connections": conn_selectors.schema_registry_connection_list(user=request.user),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def connection_new(request: HttpRequest, kind: str) -> HttpResponse:
    """A new connection, tested before it is saved (as in the wizard: "Save anyway" when it does not answer).
    `next` (a path on this site) is where to go afterwards, e.g. back to the wizard's sample step."""
    spec = connection_kind(kind)
    back = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=False):
        back = ""
    save_anyway = None
    if request.method == "POST":
        form = spec.new_form(request.POST, prefix=None)
        if form.is_valid() and request.POST.get("action") != SAVE_ANYWAY:
            outcome = test_before_saving(request.user, spec, connection_data(form), form)
            if outcome == "unreachable":
                save_anyway = {"secrets_typed": any(form.cleaned_data.get(name) for name in spec.secrets)}
        if form.is_valid():
            try:
                connection = spec.create(owner=request.user, data=connection_data(form))
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(request, f"Connection {connection.name} saved.")
                return redirect(back or "wizard:connection_list")
    else:
        form = spec.new_form(prefix=None)
    return render(
        request,
        "wizard/connection_new.html",
        {"kind": kind, "kind_label": spec.label, "form": form, "save_anyway": save_anyway, "next": back},
    )


@login_required
@require_http_methods(["GET", "POST"])
def connection_edit(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    spec = connection_kind(kind)
    connection = spec.get(user=request.user, pk=pk)
    secrets = spec.secrets
    save_anyway = None
    if request.method == "POST":
        changing = {name for name in secrets if request.POST.get(f"change_{name}") == "on"}
        data = request.POST.copy()
        for name in secrets:
            if name not in changing:
                # Validate against the stored secret without ever sending it to the browser.
                data[name] = getattr(connection, name)
        form = spec.new_form(data, instance=spec.get(user=request.user, pk=pk), prefix=None)
        if form.is_valid() and request.POST.get("action") != SAVE_ANYWAY:
            # As in the wizard: a change that breaks the connection is not saved unless the user says so.
            outcome = test_before_saving(request.user, spec, connection_data(form), form)
            if outcome == "unreachable":
                save_anyway = {"secrets_typed": bool(changing)}
        if form.is_valid():  # False once the test above put its error next to a field
            values = connection_data(form, [f for f in form._meta.fields if f not in secrets or f in changing])
            try:
                spec.update(connection=connection, data=values)
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(request, f"Connection {connection.name} saved.")
                return redirect("wizard:connection_list")
    else:
        form = spec.new_form(instance=connection, prefix=None)
    return render(
        request,
        "wizard/connection_edit.html",
        {
            "kind": kind,
            "kind_label": spec.label,
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
    spec = connection_kind(kind)
    connection = spec.get(user=request.user, pk=pk)
    context: dict[str, Any] = {"kind": kind}
    try:
        context["info"] = spec.test(connection=connection)
    except ApplicationError as exc:
        context["error"] = exc.message
    return render(request, "wizard/partials/connection_test.html", context)


@login_required
@require_POST
def connection_delete(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    spec = connection_kind(kind)
    connection = spec.get(user=request.user, pk=pk)
    try:
        spec.delete(connection=connection)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Connection {connection.name} deleted.")
    return redirect("wizard:connection_list")
