"""The join step's htmx partials: fetch a sample of the joined topic (its events and inferred fields), and the
preview of the joined rows of the two samples (`webapp.wizard.steps.join`)."""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from webapp.core.exceptions import ApplicationError
from webapp.wizard import forms
from webapp.wizard.selectors import draft_get
from webapp.wizard.services import draft_update_section
from webapp.wizard.steps import join as join_step
from webapp.wizard.steps import sample as sample_step
from webapp.wizard.steps.common import initial_from, kafka_connection_of, schema_registry_connection_of
from webapp.wizard.steps.join_checks import JOIN_SECTION


@login_required
@require_POST
def join_sample_fetch(request: HttpRequest, draft_id: int) -> HttpResponse:
    """Fetch N events of the chosen topic, keep them in the draft, and answer them with the fields inferred from
    them (fields added by hand kept), as the sample step does for the left side. The preview follows
    (`HX-Trigger: join-preview`)."""
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
    position = request.POST.get("position") if request.POST.get("position") in ("newest", "oldest") else "newest"
    try:
        fetched = sample_step.fetch_sample(
            connection=connection,
            registry=schema_registry_connection_of(request, draft),  # the right side is read as the left one
            topics=[topic],
            count=count or 20,
            position=position,
        )
    except ApplicationError as exc:
        context["error"] = exc.message
        return _area(request, context)
    stored, _truncated = sample_step.events_to_store(fetched.events)
    decoded = [e["value"] for e in stored if not e["decode_error"]]
    keep = read.rows if topic == draft.section(JOIN_SECTION).get("topic") else [r for r in read.rows if r["manual"]]
    try:
        rows = sample_step.inferred_rows(decoded, keep, avro_schema=fetched.avro_schema) if stored else keep
    except ApplicationError as exc:  # a schema over a cap (limits.SCHEMA_FIELDS...): said, and nothing stored
        context["error"] = exc.message
        return _area(request, context)
    fetched_at = datetime.now(UTC).isoformat(timespec="seconds")
    draft_update_section(
        draft=draft,
        step=JOIN_SECTION,
        changes={"events": stored, "fetched_at": fetched_at, "topic": topic, "count": count, "position": position},
    )
    read.rows, read.rows_error = rows, ""  # the rows are what the sample gave: nothing to say about them yet
    read.dedup_form = join_step.right_dedup_form(rows, initial=_dedup_initial(request))
    context = join_step.join_context(draft, read, topics_error)
    response = _area(request, context)
    response["HX-Trigger"] = "join-preview"
    return response


def _dedup_initial(request: HttpRequest) -> dict:
    return initial_from(request.POST, forms.DedupForm, prefix=join_step.RIGHT_DEDUP)


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
