"""The wizard's sample step, live: fetch N events of the draft's topics, store them in the draft, and show them with
the schema inferred from them (an htmx partial).

The worker reads the events (`webapp.connections.heavy_requests`): the POST checks the form and answers the area
with a "reading" line that asks `sample_fetch_result` every second (htmx) until the events are there; what the
user had typed into the schema's rows travels with the request, and comes back with the events.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from webapp.connections import heavy_requests
from webapp.connections.kafka_client import SampledEvent
from webapp.connections.models import HeavyRequest
from webapp.core.exceptions import ApplicationError
from webapp.wizard.forms import REGISTRY_FORMATS
from webapp.wizard.selectors import draft_get
from webapp.wizard.services import draft_update_section
from webapp.wizard.steps import common as step_common
from webapp.wizard.steps import sample as sample_step


@login_required
@require_POST
def sample_fetch(request: HttpRequest, draft_id: int) -> HttpResponse:
    """Ask the worker for N events of the draft's topics; the area says it reads them, and asks again."""
    draft = draft_get(user=request.user, pk=draft_id)
    form = step_common.sample_form(request, request.POST)
    keep = sample_step.parse_field_rows(request.POST)
    context = _context(form, keep, draft.section("sample").get("events", []))
    connection = step_common.kafka_connection_of(request, draft)
    topics = step_common.draft_topics(draft)
    if not form.is_valid():
        context["error"] = "; ".join(f"{form.fields[n].label}: {e[0]}" for n, e in form.errors.items())
        return _area(request, context)
    if connection is None or not topics:
        context["error"] = "Choose a connection and a topic first (steps 1 and 2)."
        return _area(request, context)
    registry = form.cleaned_data["schema_registry"] if form.cleaned_data["format"] in REGISTRY_FORMATS else None
    params = {
        "topics": list(topics),
        "count": form.cleaned_data["count"],
        "position": form.cleaned_data["position"],
        "schema_registry_connection": registry.pk if registry is not None else None,
        # What the step's form held: the format chosen, and the schema's rows as typed.
        "format": form.cleaned_data["format"],
        "rows": keep,
    }
    try:
        heavy = heavy_requests.heavy_request_start(
            kind=HeavyRequest.Kind.SAMPLE,
            user=request.user,
            connection=connection,
            params=params,
            page=f"draft {draft.pk} sample",
        )
    except ApplicationError as exc:
        context["error"] = exc.message
        return _area(request, context)
    return _reading(request, draft_id, heavy, context)


@login_required
@require_GET
def sample_fetch_result(request: HttpRequest, draft_id: int, request_id: str) -> HttpResponse:
    """The events and the schema inferred from them once the worker has them (stored in the draft); until then
    the area with the "reading" line again."""
    draft = draft_get(user=request.user, pk=draft_id)
    heavy = heavy_requests.heavy_request_get(user=request.user, pk=request_id, kind=HeavyRequest.Kind.SAMPLE)
    params = heavy.params
    form = step_common.sample_form(request, _form_data(params))
    form.is_valid()  # valid when posted; a registry deleted since reads as none
    keep = params.get("rows") or []
    context = _context(form, keep, draft.section("sample").get("events", []))
    if heavy.status == HeavyRequest.Status.FAILED:
        context["error"] = (heavy.error or {}).get("message", "")
        return _area(request, context)
    if heavy.status != HeavyRequest.Status.DONE:
        return _reading(request, draft_id, heavy, context)
    result = heavy.result
    events = [SampledEvent(**kept_event(e)) for e in result["events"]]
    avro_schema, versions = result.get("schema"), result.get("versions") or []
    stored, truncated = sample_step.events_to_store(events)
    decoded = [e["value"] for e in stored if not e["decode_error"]]
    try:
        rows = sample_step.inferred_rows(decoded, keep, avro_schema=avro_schema) if stored or avro_schema else keep
    except ApplicationError as exc:  # a schema over a cap (limits.SCHEMA_FIELDS...): said, and nothing stored
        context["error"] = exc.message
        return _area(request, context)
    sample_step.save_format(draft, form)
    fetched_at = datetime.now(UTC).isoformat(timespec="seconds")
    draft_update_section(
        draft=draft,
        step="sample",
        changes={
            "events": stored,
            "fetched_at": fetched_at,
            "count": params["count"],
            "position": params["position"],
            "schema_versions": versions,
            "column_types": sample_step.schema_column_types(avro_schema),
        },
    )
    context.update(
        {
            "events": stored,
            "rows": rows,
            "fetched": True,
            "fetched_at": fetched_at,
            "truncated": truncated,
            "requested": len(events),
            "schema_versions": versions,
            # Most values in the Confluent wire format, read as JSON: the format should be Avro or Protobuf.
            "avro_hint": params.get("schema_registry_connection") is None and result.get("framed", 0) * 2 > len(events),
            "undecodable": sum(1 for e in stored if e["decode_error"]),
        }
    )
    return _area(request, context)


def _context(form: Any, rows: list[dict[str, Any]], events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"form": form, "field_types": step_common.FIELD_TYPE_CHOICES, "rows": rows, "events": events}


def _form_data(params: dict[str, Any]) -> dict[str, Any]:
    registry = params.get("schema_registry_connection")
    return {
        "count": params.get("count"),
        "position": params.get("position"),
        "format": params.get("format") or "json",
        "schema_registry": "" if registry is None else str(registry),
    }


def kept_event(kept: dict[str, Any]) -> dict[str, Any]:
    """A sampled event as the worker kept it (JSON), as `SampledEvent` takes it (its time parsed again)."""
    timestamp = kept.get("timestamp")
    return {**kept, "timestamp": datetime.fromisoformat(timestamp) if timestamp else None}


def _reading(request: HttpRequest, draft_id: int, heavy: HeavyRequest, context: dict[str, Any]) -> HttpResponse:
    poll = reverse("wizard:sample_fetch_result", kwargs={"draft_id": draft_id, "request_id": heavy.pk})
    return _area(request, {**context, "reading": {"progress": heavy.progress, "poll": poll}})


def _area(request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
    return render(request, "wizard/partials/sample_area.html", context)
