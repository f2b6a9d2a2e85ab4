"""The join step's htmx partials: fetch a sample of the joined topic (its events and inferred fields), and the
preview of the joined rows of the two samples (`webapp.wizard.steps.join`).

The worker reads the joined topic's events (`webapp.connections.heavy_requests`), as for the sample step
(`webapp.wizard.sample_views`): the POST answers the area with a "reading" line that asks every second."""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from webapp.connections import heavy_requests
from webapp.connections.kafka_client import SampledEvent
from webapp.connections.models import HeavyRequest
from webapp.core.exceptions import ApplicationError
from webapp.wizard import forms
from webapp.wizard.sample_views import kept_event
from webapp.wizard.selectors import draft_get
from webapp.wizard.services import draft_update_section
from webapp.wizard.steps import join as join_step
from webapp.wizard.steps import sample as sample_step
from webapp.wizard.steps.common import initial_from, kafka_connection_of, schema_registry_connection_of
from webapp.wizard.steps.join_checks import JOIN_SECTION
from webapp.wizard.steps.join_sample import SPAN, sample_span


@login_required
@require_POST
def join_sample_fetch(request: HttpRequest, draft_id: int) -> HttpResponse:
    """Ask the worker for N events of the chosen topic; the area says it reads them, and asks again
    (`join_sample_fetch_result`). The form as posted travels with the request."""
    draft = draft_get(user=request.user, pk=draft_id)
    topics, topics_error = join_step.right_topics(request, draft)
    read = join_step.read_join(draft, request.POST, topics=topics, kafka={})
    read.rows_error = ""  # a fetch is how the rows come: their absence is no error here
    context = join_step.join_context(draft, read, topics_error)
    form = read.form
    topic = request.POST.get("right_topic") or ""
    count = form.cleaned_data.get("count") if form.is_valid() else None
    connection = kafka_connection_of(request, draft)
    if topic not in topics or connection is None:
        context["error"] = topics_error or "Choose the topic to join first."
        return _area(request, context)
    if form.errors.get("count"):
        context["error"] = f"{form.fields['count'].label}: {form.errors['count'][0]}"
        return _area(request, context)
    position = request.POST.get("position") if request.POST.get("position") in ("newest", "oldest") else SPAN
    registry = schema_registry_connection_of(request, draft)  # the right side is read as the left one
    params = {
        "topics": [topic],
        "count": count or 20,
        "position": "newest" if position == SPAN else position,  # a span holding no event: the newest instead
        "schema_registry_connection": registry.pk if registry is not None else None,
        "form": {key: request.POST.getlist(key) for key in request.POST if key != "csrfmiddlewaretoken"},
    }
    if position == SPAN:
        span = sample_span(draft)
        params["span"] = span and {"start_ms": span["start_ms"], "end_ms": span["end_ms"]}
        params["sampled_over"] = span or {"untimed": True}  # what the step says of the read, with what it found
    try:
        heavy = heavy_requests.heavy_request_start(
            kind=HeavyRequest.Kind.SAMPLE,
            user=request.user,
            connection=connection,
            params=params,
            page=f"draft {draft.pk} join",
        )
    except ApplicationError as exc:
        context["error"] = exc.message
        return _area(request, context)
    return _reading(request, draft.pk, heavy, context)


@login_required
@require_GET
def join_sample_fetch_result(request: HttpRequest, draft_id: int, request_id: str) -> HttpResponse:
    """Once the worker has the events: keep them in the draft, and answer them with the fields inferred from them
    (fields added by hand kept), as the sample step does for the left side; the preview follows
    (`HX-Trigger: join-preview`). Until then the area with the "reading" line again."""
    draft = draft_get(user=request.user, pk=draft_id)
    heavy = heavy_requests.heavy_request_get(user=request.user, pk=request_id, kind=HeavyRequest.Kind.SAMPLE)
    if heavy.params.get("page") != f"draft {draft.pk} join":
        raise Http404("No such request: it was never made by you, or it ended long ago.")
    params = heavy.params
    post = QueryDict(mutable=True)
    for key, values in (params.get("form") or {}).items():
        post.setlist(key, values)
    topics, topics_error = join_step.right_topics(request, draft)
    read = join_step.read_join(draft, post, topics=topics, kafka={})
    read.rows_error = ""
    context = join_step.join_context(draft, read, topics_error)
    if heavy.status == HeavyRequest.Status.FAILED:
        context["error"] = (heavy.error or {}).get("message", "")
        return _area(request, context)
    if heavy.status != HeavyRequest.Status.DONE:
        return _reading(request, draft.pk, heavy, context)
    topic = params["topics"][0]
    result = heavy.result
    events = [SampledEvent(**kept_event(e)) for e in result["events"]]
    stored, _truncated = sample_step.events_to_store(events)
    decoded = [e["value"] for e in stored if not e["decode_error"]]
    keep = read.rows if topic == draft.section(JOIN_SECTION).get("topic") else [r for r in read.rows if r["manual"]]
    try:
        rows = sample_step.inferred_rows(decoded, keep, avro_schema=result.get("schema")) if stored else keep
    except ApplicationError as exc:  # a schema over a cap (limits.SCHEMA_FIELDS...): said, and nothing stored
        context["error"] = exc.message
        return _area(request, context)
    fetched_at = datetime.now(UTC).isoformat(timespec="seconds")
    changes = {"events": stored, "fetched_at": fetched_at, "topic": topic, "count": params["count"]}
    span = params.get("sampled_over")
    if span is not None and result.get("span"):
        span = {**span, "found": result["span"]["found"]}
    position = SPAN if "sampled_over" in params else params["position"]
    draft_update_section(draft=draft, step=JOIN_SECTION, changes={**changes, "position": position, "span": span})
    read.rows, read.rows_error = rows, ""  # the rows are what the sample gave: nothing to say about them yet
    read.dedup_form = join_step.right_dedup_form(rows, initial=_dedup_initial(post))
    context = join_step.join_context(draft, read, topics_error)
    response = _area(request, context)
    response["HX-Trigger"] = "join-preview"
    return response


def _reading(request: HttpRequest, draft_id: int, heavy: HeavyRequest, context: dict) -> HttpResponse:
    poll = reverse("wizard:join_sample_fetch_result", kwargs={"draft_id": draft_id, "request_id": heavy.pk})
    return _area(request, {**context, "reading": {"progress": heavy.progress, "poll": poll}})


def _dedup_initial(post: QueryDict) -> dict:
    return initial_from(post, forms.DedupForm, prefix=join_step.RIGHT_DEDUP)


def _area(request: HttpRequest, context: dict) -> HttpResponse:
    return render(request, "wizard/partials/join_right_area.html", context)


@login_required
@require_POST
def join_preview(request: HttpRequest, draft_id: int) -> HttpResponse:
    """The joined rows of the two samples for the join as the form holds it now, or the API's findings that keep
    it from being previewed."""
    draft = draft_get(user=request.user, pk=draft_id)
    topics, _error = join_step.right_topics(request, draft)
    read = join_step.read_join(draft, request.POST, topics=topics, kafka=join_step.kafka_section(request, draft))
    context = join_step.preview_context(draft, read)
    return render(request, "wizard/partials/join_preview.html", context)
