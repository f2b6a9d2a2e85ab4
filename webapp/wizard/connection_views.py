"""The saved connections: list, edit (secrets are never shown: a "change" switch instead), test, delete.

New connections are made in the wizard's steps 1 and 6; this page looks after them afterwards.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.connections import selectors as conn_selectors
from webapp.connections import services as conn_services
from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.core.exceptions import ApplicationError
from webapp.wizard import forms
from webapp.wizard.step_handlers import add_validation_errors


def _kind(kind: str) -> dict[str, Any]:
    kinds = {
        "kafka": {
            "label": "Kafka",
            "form": forms.KafkaConnectionForm,
            "get": conn_selectors.kafka_connection_get,
            "update": conn_services.kafka_connection_update,
            "delete": conn_services.kafka_connection_delete,
            "test": conn_services.kafka_connection_test,
            "secrets": KafkaConnection.SECRET_FIELDS,
        },
        "clickhouse": {
            "label": "ClickHouse",
            "form": forms.ClickHouseConnectionForm,
            "get": conn_selectors.clickhouse_connection_get,
            "update": conn_services.clickhouse_connection_update,
            "delete": conn_services.clickhouse_connection_delete,
            "test": conn_services.clickhouse_connection_test,
            "secrets": ClickHouseConnection.SECRET_FIELDS,
        },
    }
    if kind not in kinds:
        raise Http404("No such kind of connection.")
    return kinds[kind]


@login_required
@require_GET
def connection_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "wizard/connection_list.html",
        {
            "kafka_connections": conn_selectors.kafka_connection_list(user=request.user),
            "clickhouse_connections": conn_selectors.clickhouse_connection_list(user=request.user),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def connection_edit(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    spec = _kind(kind)
    connection = spec["get"](user=request.user, pk=pk)
    secrets = spec["secrets"]
    if request.method == "POST":
        changing = {name for name in secrets if request.POST.get(f"change_{name}") == "on"}
        data = request.POST.copy()
        for name in secrets:
            if name not in changing:
                # Validate against the stored secret without ever sending it to the browser.
                data[name] = getattr(connection, name)
        form = spec["form"](data, instance=spec["get"](user=request.user, pk=pk), prefix=None)
        if form.is_valid():
            fields = [f for f in spec["form"]._meta.fields if f not in secrets or f in changing]
            values = {name: form.cleaned_data.get(name) for name in fields}
            values = {k: ("" if v is None else v) for k, v in values.items()}
            try:
                spec["update"](connection=connection, data=values)
            except ValidationError as exc:
                add_validation_errors(form, exc)
            else:
                messages.success(request, f"Connection {connection.name} saved.")
                return redirect("wizard:connection_list")
    else:
        form = spec["form"](instance=connection, prefix=None)
    return render(
        request,
        "wizard/connection_edit.html",
        {
            "kind": kind,
            "kind_label": spec["label"],
            "connection": connection,
            "form": form,
            "secrets": [
                {
                    "field": form[name],
                    "is_set": bool(getattr(connection, name)),
                    "changing": request.POST.get(f"change_{name}") == "on",
                }
                for name in secrets
            ],
            "other_fields": [form[name] for name in spec["form"]._meta.fields if name not in secrets],
        },
    )


@login_required
@require_POST
def connection_test(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    spec = _kind(kind)
    connection = spec["get"](user=request.user, pk=pk)
    context: dict[str, Any] = {"kind": kind}
    try:
        context["info"] = spec["test"](connection=connection)
    except ApplicationError as exc:
        context["error"] = exc.message
    return render(request, "wizard/partials/connection_test.html", context)


@login_required
@require_POST
def connection_delete(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    spec = _kind(kind)
    connection = spec["get"](user=request.user, pk=pk)
    try:
        spec["delete"](connection=connection)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Connection {connection.name} deleted.")
    return redirect("wizard:connection_list")
