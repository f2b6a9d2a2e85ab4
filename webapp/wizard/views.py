"""The wizard's pages and its htmx partials (the pipeline pages are the pipelines app's).

Plain function views: they find the user's objects through selectors (someone else's is a 404), call
services, and render a page or, for htmx requests, a small partial template.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.datastructures import MultiValueDict
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.connections import selectors as conn_selectors
from webapp.connections.forms import connection_data
from webapp.core.exceptions import ApplicationError
from webapp.core.responses import json_attachment
from webapp.pipelines import metrics_history
from webapp.pipelines import selectors as pipeline_selectors
from webapp.wizard import draft_spec
from webapp.wizard.connection_kinds import CLICKHOUSE, KAFKA, ConnectionKind
from webapp.wizard.selectors import draft_get
from webapp.wizard.services import (
    RAW_KEY,
    draft_discard,
    draft_get_or_create,
    draft_goto,
    draft_keep_raw,
)
from webapp.wizard.steps import SLUGS, STEPS, previous_slug, step_by_slug, step_index
from webapp.wizard.steps import common as step_common
from webapp.wizard.steps import review as review_step
from webapp.wizard.steps import transform as transform_step
from webapp.wizard.steps.handlers import HANDLERS

# The "Test connection" answer, the connections page's own partial.
CONNECTION_TEST_PARTIAL = "connections/partials/connection_test.html"


def step_url(draft, step: str) -> str:
    return reverse("wizard:step", kwargs={"draft_id": draft.pk, "step": step})


# -- wizard entry points --------------------------------------------------------------------------------


@login_required
@require_GET
def wizard_new(request: HttpRequest) -> HttpResponse:
    """Start a new pipeline, or resume the draft left last time at the step it was on."""
    draft = draft_get_or_create(user=request.user)
    return redirect(step_url(draft, draft.step))


@login_required
@require_GET
def wizard_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Edit an existing pipeline through the same steps (resuming an edit already under way)."""
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    initial = draft_spec.edit_draft_data(
        pipeline.stored_spec or {},
        kafka_connection_id=pipeline.kafka_connection_id,
        clickhouse_connection_id=pipeline.clickhouse_connection_id,
        schema_registry_connection_id=pipeline.schema_registry_connection_id,
        name=pipeline.name,
        accept_dead_letters=pipeline.current_version.accept_dead_letters if pipeline.current_version else (),
        topics_read=metrics_history.topics_read_or_none(pipeline) or [],
    )
    draft = draft_get_or_create(user=request.user, pipeline=pipeline, initial_data=initial)
    return redirect(step_url(draft, draft.step))


@login_required
@require_POST
def wizard_discard(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = draft_get(user=request.user, pk=draft_id)
    pipeline_id = draft.pipeline_id
    draft_discard(draft=draft)
    messages.success(request, "The draft was discarded.")
    if pipeline_id:
        return redirect("pipelines:detail", pk=pipeline_id)
    return redirect("pipelines:list")


@login_required
@require_http_methods(["GET", "POST"])
def wizard_step(request: HttpRequest, draft_id: int, step: str) -> HttpResponse:
    draft = draft_get(user=request.user, pk=draft_id)
    if step not in SLUGS:
        raise Http404("No such step.")
    if not draft.can_open(step):
        return redirect(step_url(draft, draft.reached))
    show, submit = HANDLERS[step]
    status = 200
    if request.method == "POST":
        action = request.POST.get("action", "next")
        if action == "back":
            draft_keep_raw(draft=draft, step=step, post=request.POST)
            return redirect(step_url(draft, previous_slug(step) or step))
        result = submit(request, draft)
        if isinstance(result, HttpResponse):
            return result
        if result is None:
            return redirect(step_url(draft, draft.step))
        context = dict(result)
        # A step that only changed its own phase (e.g. ClickHouse connection chosen) is not an error.
        status = context.pop("status", 200 if action in ("connect", "change_connection") else 422)
        if status == 422:  # what was typed survives a reload of this page (a GET) and a later visit
            draft_keep_raw(draft=draft, step=step, post=request.POST, go_back=False)
    else:
        draft_goto(draft=draft, step=step)
        raw = (draft.data.get(RAW_KEY) or {}).get(step)
        context = show(request, draft, MultiValueDict(raw) if raw else None)
    return render(request, f"wizard/steps/{step}.html", {**_wizard_context(draft, step), **context}, status=status)


@login_required
@require_POST
def wizard_keep_input(request: HttpRequest, draft_id: int, step: str) -> HttpResponse:
    """htmx, while the user types: keep the step's input in the draft, so a reload shows it again (204)."""
    draft = draft_get(user=request.user, pk=draft_id)
    if step not in SLUGS:
        raise Http404("No such step.")
    if draft.can_open(step):
        draft_keep_raw(draft=draft, step=step, post=request.POST, go_back=False)
    return HttpResponse(status=204)


def _wizard_context(draft, step: str) -> dict:
    index = step_index(step)
    return {
        "draft": draft,
        "step": step_by_slug(step),
        "step_number": index + 1,
        "step_count": len(STEPS),
        "steps": [
            {
                "slug": s.slug,
                "title": s.title,
                "number": i + 1,
                "url": step_url(draft, s.slug),
                "current": s.slug == step,
                "open": draft.can_open(s.slug),
                "done": i < draft.reached_index and s.slug != step,
            }
            for i, s in enumerate(STEPS)
        ],
        "is_first": index == 0,
        "is_last": index == len(STEPS) - 1,
        "pipeline": draft.pipeline,
    }


# -- htmx partials --------------------------------------------------------------------------------------


def _partial(request: HttpRequest, template: str, context: dict) -> HttpResponse:
    return render(request, f"wizard/partials/{template}", context)


@login_required
@require_POST
def kafka_test(request: HttpRequest, draft_id: int) -> HttpResponse:
    """ "Test connection": the brokers and topic count, or the broker's error in plain words."""
    draft_get(user=request.user, pk=draft_id)
    return _connection_test(request, KAFKA)


@login_required
@require_POST
def clickhouse_test(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft_get(user=request.user, pk=draft_id)
    return _connection_test(request, CLICKHOUSE)


def _connection_test(request: HttpRequest, kind: ConnectionKind) -> HttpResponse:
    choice = kind.choice_form(request.POST, connections=kind.list(user=request.user))
    context: dict = {"kind": kind.slug}
    if not choice.is_valid():
        context["error"] = "Choose a saved connection first, or enter a new one."
        return render(request, CONNECTION_TEST_PARTIAL, context)
    if choice.cleaned_data["source"] == "saved":
        connection = choice.cleaned_data["connection"]
    else:
        post = request.POST.copy()
        post["new-name"] = post.get("new-name") or "untitled"  # a name is only needed to save it
        new = kind.form(post)
        if not new.is_valid():
            context["error"] = "Fill in the connection fields first."
            context["field_errors"] = [
                f"{new.fields[n].label}: {e[0]}" for n, e in new.errors.items() if n in new.fields
            ]
            return render(request, CONNECTION_TEST_PARTIAL, context)
        data = connection_data(new)
        data["name"] = data.get("name") or "untitled"
        try:
            connection = kind.build(owner=request.user, data=data)
        except ValidationError as exc:
            context["error"] = "Some connection fields need fixing first."
            context["field_errors"] = [
                f"{new.fields[n].label if n in new.fields else n}: {m[0]}" for n, m in exc.message_dict.items()
            ]
            return render(request, CONNECTION_TEST_PARTIAL, context)
    try:
        info = kind.test(connection=connection)
    except ApplicationError as exc:
        context["error"] = exc.message
    else:
        context["info"] = info
    return render(request, CONNECTION_TEST_PARTIAL, context)


@login_required
@require_GET
def topic_list(request: HttpRequest, draft_id: int) -> HttpResponse:
    """The searchable topic list: topics matching `q`, the chosen ones always shown first."""
    draft = draft_get(user=request.user, pk=draft_id)
    query = (request.GET.get("q") or "").strip().lower()
    selected = request.GET.getlist("topics")
    if "loaded" not in request.GET:
        selected = selected or (draft.spec.source.topics or [])
    connection = step_common.kafka_connection_of(request, draft)
    context: dict = {"selected": selected, "query": query}
    if connection is None:
        context["error"] = "Choose a Kafka connection in step 1 first."
        return _partial(request, "topic_list.html", context)
    try:
        topics = conn_selectors.kafka_topic_list(connection=connection)
    except ApplicationError as exc:
        context["error"] = exc.message
        return _partial(request, "topic_list.html", context)
    shown = [t for t in topics if t.name in selected] + [
        t for t in topics if t.name not in selected and (not query or query in t.name.lower())
    ]
    context.update({"topics": shown, "total": len(topics), "connection": connection})
    return _partial(request, "topic_list.html", context)


@login_required
@require_POST
def transform_check(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = draft_get(user=request.user, pk=draft_id)
    context = transform_step.check_transform(draft, request.POST)
    context["checked"] = True
    return _partial(request, "transform_body.html", {**context, "draft": draft})


@login_required
@require_GET
def clickhouse_tables(request: HttpRequest, draft_id: int) -> HttpResponse:
    """The existing tables of a database (for the "existing table" choice), and its databases."""
    draft = draft_get(user=request.user, pk=draft_id)
    connection = step_common.clickhouse_connection_of(request, draft)
    database = request.GET.get("database") or ""
    selected = request.GET.get("table") or draft.spec.sink.table or ""
    context: dict = {"database": database, "selected": selected}
    if connection is None:
        context["error"] = "Choose a ClickHouse connection first."
        return _partial(request, "clickhouse_tables.html", context)
    try:
        context["databases"] = conn_selectors.clickhouse_database_list(connection=connection)
        if database in context["databases"]:
            context["tables"] = conn_selectors.clickhouse_table_list(connection=connection, database=database)
        else:
            context["unknown_database"] = bool(database)
    except ApplicationError as exc:
        context["error"] = exc.message
    return _partial(request, "clickhouse_tables.html", context)


@login_required
@require_GET
def clickhouse_columns(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = draft_get(user=request.user, pk=draft_id)
    connection = step_common.clickhouse_connection_of(request, draft)
    database = request.GET.get("database") or ""
    table = request.GET.get("table") or ""
    context: dict = {"table": table}
    if connection is None or not table or not database:
        return _partial(request, "clickhouse_columns.html", context)
    try:
        context["columns"] = conn_selectors.clickhouse_column_list(
            connection=connection, database=database, table=table
        )
    except ApplicationError as exc:
        context["error"] = exc.message
    return _partial(request, "clickhouse_columns.html", context)


@login_required
@require_GET
def review_spec(request: HttpRequest, draft_id: int) -> HttpResponse:
    """The review step's spec JSON again, for the name and start position being typed (htmx)."""
    draft = draft_get(user=request.user, pk=draft_id)
    context = review_step.review_context(
        request, draft, request.GET.get("name", ""), request.GET.get("starting_offsets") or "earliest", live=False
    )
    return _partial(request, "spec_json.html", {"spec_json": context["spec_json"]})


@login_required
@require_GET
def draft_spec_download(request: HttpRequest, draft_id: int) -> HttpResponse:
    """The spec the review step shows, as a file (connections merged in, secrets masked)."""
    draft = draft_get(user=request.user, pk=draft_id)
    review = draft.section("review")
    name = request.GET.get("name") or review.get("name") or "pipeline"
    context = review_step.review_context(
        request,
        draft,
        name,
        request.GET.get("starting_offsets") or draft.spec.source.starting_offsets or "earliest",
        live=False,
    )
    return json_attachment(json.loads(context["spec_json"]), f"{name}.json")
