"""The wizard's dedup step, live: key advice over the draft's topics (an htmx partial): how many duplicates each
candidate key finds, how late they come, and the window that covers them (`webapp.connections.key_advice`).

Runs on the step's load and whenever the key fields or the time basis change. The worker reads the events
(`webapp.connections.heavy_requests`): the POST answers a "reading" partial that asks `key_advice_result` every
second (htmx) until the figures are there, with what the worker is doing in words; the browser can cancel
(frontend/js/key_advice.js). The page preselects the recommended window unless the user chose one.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from clearflow_spec.sizing import human_bytes
from clearflow_spec.spec import parse_window
from webapp.connections import heavy_requests
from webapp.connections import key_advice as advice
from webapp.connections.models import HeavyRequest
from webapp.connections.throttle import count_connection_request
from webapp.core.exceptions import ApplicationError
from webapp.wizard.selectors import draft_get
from webapp.wizard.services import draft_keep_advice
from webapp.wizard.steps.common import draft_topics, kafka_connection_of


def analysis_context(analysis: advice.KeyAdvice) -> dict[str, Any]:
    """The figures as the partial shows them: percentages, durations in words, histogram bar widths."""
    delays = analysis.delay_ms
    tallest = max((b.count for b in analysis.histogram), default=0)
    window_ms = None
    if analysis.recommended_window:
        window_ms = parse_window(analysis.recommended_window) * 1000
    bins = [
        {
            "label": b.label,
            "count": b.count,
            "width": round(100 * b.count / tallest, 1) if tallest else 0,
            "covered": window_ms is not None and b.upper_ms is not None and b.upper_ms <= window_ms,
        }
        for b in analysis.histogram
    ]
    scanned = analysis.scanned or 1
    return {
        "analysis": analysis,
        "duplicate_pct": round(100 * analysis.duplicate_share, 1),
        "missing_pct": round(100 * analysis.missing_keys / scanned, 1),
        "delays": {
            "p50": advice.human_duration(delays.p50),
            "p99": advice.human_duration(delays.p99),
            "max": advice.human_duration(delays.max),
        }
        if delays
        else None,
        "span": advice.human_duration(analysis.span_ms) if analysis.span_ms else None,
        # In the units of the review step's "Dedup state" card and its warnings (clearflow_spec.sizing.human_bytes).
        "state_disk": None if analysis.estimated_state_bytes is None else human_bytes(analysis.estimated_state_bytes),
        "bins": bins,
        "candidates": [
            {
                "field": c.field,
                "pct": round(100 * c.duplicate_share, 1),
                "differing": c.differing,
                "merges": c.differing > 0.5 * c.duplicates if c.duplicates else False,
                "chosen": [c.field] == analysis.keys,
            }
            for c in analysis.candidates
        ],
        "max_events": advice.DEFAULT_MAX_EVENTS,
    }


def advice_kept(analysis: advice.KeyAdvice) -> dict[str, Any] | None:
    """The recommendation, and what it was measured for (None: no window recommended for these keys)."""
    if not analysis.recommended_window or not analysis.keys:
        return None
    return {
        "window": analysis.recommended_window,
        "lower_bound": analysis.window_is_lower_bound,
        "state_bytes": analysis.estimated_state_bytes,
        # The measured rate, for sizing the state of any window (webapp.pipelines.state_size).
        "events_per_second": round(analysis.scanned * 1000 / analysis.span_ms, 3) if analysis.span_ms else None,
        "unique_share": round(analysis.distinct_keys / analysis.scanned, 4) if analysis.scanned else None,
        "keys": analysis.keys,
        "time": analysis.time,
        "event_time_field": analysis.event_time_field,
    }


@login_required
@require_POST
def key_advice(request: HttpRequest, draft_id: int) -> HttpResponse:
    """Measure the duplicates of the draft's topics by the posted key fields and time basis."""
    draft = draft_get(user=request.user, pk=draft_id)
    context: dict[str, Any] = {"enabled": request.POST.get("enabled", "on") == "on"}
    topics = draft_topics(draft)
    connection = kafka_connection_of(request, draft)
    if not context["enabled"]:
        return _render(request, context)
    if connection is None or not topics:
        context["error"] = "Choose a Kafka connection and topics first (steps 1 and 2)."
        return _render(request, context)
    keys = [k for k in request.POST.getlist("keys") if k]
    event_time_field = request.POST.get("event_time_field") or None
    event_basis = request.POST.get("time_basis") == "event_time" and event_time_field is not None
    params = {
        "topics": list(topics),
        "keys": keys,
        "time": "event" if event_basis else "ingestion",
        "event_time_field": event_time_field if event_basis else None,
        # Asked by event time without the field: the figures say they are by Kafka timestamp.
        "time_note": request.POST.get("time_basis") == "event_time" and not event_basis,
    }
    try:
        count_connection_request(connection.owner)
        heavy = heavy_requests.heavy_request_start(
            kind=HeavyRequest.Kind.KEY_ADVICE,
            user=request.user,
            connection=connection,
            params=params,
            page=f"draft {draft.pk} dedup",
        )
    except ApplicationError as exc:
        context["error"] = f"Could not measure the duplicates: {exc.message}"
        return _render(request, context)
    return _reading(request, draft_id, heavy)


@login_required
@require_GET
def key_advice_result(request: HttpRequest, draft_id: int, request_id: str) -> HttpResponse:
    """The figures once the worker has them; until then the "reading" partial again (it asks again in a second)."""
    draft = draft_get(user=request.user, pk=draft_id)
    heavy = heavy_requests.heavy_request_get(user=request.user, pk=request_id, kind=HeavyRequest.Kind.KEY_ADVICE)
    context: dict[str, Any] = {"enabled": True}
    if heavy.status == HeavyRequest.Status.FAILED:
        context["error"] = f"Could not measure the duplicates: {(heavy.error or {}).get('message', '')}"
        return _render(request, context)
    if heavy.status != HeavyRequest.Status.DONE:
        return _reading(request, draft_id, heavy)
    analysis = advice.key_advice_from_dict(heavy.result)
    context.update(analysis_context(analysis))
    # What the review step puts beside the chosen window (webapp/wizard/steps/dedup.py: window_advice).
    draft_keep_advice(draft=draft, advice=advice_kept(analysis))
    if heavy.params.get("time_note"):
        context["time_note"] = "Choose the event-time field to measure the delays by it; shown by Kafka timestamp."
    return _render(request, context)


def _reading(request: HttpRequest, draft_id: int, heavy: HeavyRequest) -> HttpResponse:
    poll = reverse("wizard:key_advice_result", kwargs={"draft_id": draft_id, "request_id": heavy.pk})
    return render(request, "wizard/partials/key_advice_reading.html", {"heavy": heavy, "poll": poll})


def _render(request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
    return render(request, "wizard/partials/key_advice.html", context)
