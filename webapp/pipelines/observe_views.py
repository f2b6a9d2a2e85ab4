"""The pipeline page's live parts: the metrics summary (htmx partial; the charts read the API themselves) and
the dead letters (list partial, one payload in full, download, replay with its forecast, purge). Someone else's
pipeline is a 404."""

from __future__ import annotations

import json
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from webapp.core.exceptions import ApplicationError
from webapp.pipelines import dead_letters, metrics_history
from webapp.pipelines import selectors as pipeline_selectors
from webapp.pipelines.metrics import MetricsUnavailableError
from webapp.pipelines.observe_apis import dead_letter_download
from webapp.workspaces import policy

RAW_PREVIEW = 160


@login_required
@require_GET
def pipeline_metrics(request: HttpRequest, pk: int) -> HttpResponse:
    """The latest batch and the running totals (dead letters included), polled by htmx."""
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    context: dict = {"pipeline": pipeline}
    try:
        history = metrics_history.pipeline_metrics_history(pipeline=pipeline, limit=1)
    except MetricsUnavailableError as exc:
        context["error"] = exc.message
    else:
        context["latest"] = history.records[-1] if history.records else None
        context["totals"] = history.totals
        context["pace"] = metrics_history.pace_of(pipeline)
    if not context.get("latest"):
        # Before the first batch ends (the backlog's can take a while): how long the job has been at it.
        run = pipeline_selectors.pipeline_run_active(pipeline=pipeline)
        if run is not None and run.running_at is not None:
            context["first_batch_for"] = _duration(timezone.now() - run.running_at)
            context["running_since"] = run.running_at
    response = render(request, "pipelines/partials/pipeline_metrics.html", context)
    if context.get("latest") and request.GET.get("had") == "none":
        # The first batch just ended: the page's other parts that wait for one (the Proof) look again now.
        response["HX-Trigger"] = "first-batch"
    return response


def _duration(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min {seconds % 60} s"


@login_required
@require_GET
def dead_letter_list(request: HttpRequest, pk: int) -> HttpResponse:
    """One page of the dead letters (htmx partial; `?page=N`)."""
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    try:
        page_number = max(1, int(request.GET.get("page", "1")))
    except ValueError:
        page_number = 1
    context: dict = {"pipeline": pipeline, "raw_preview": RAW_PREVIEW}
    try:
        context["page"] = dead_letters.dead_letter_page(
            pipeline=pipeline,
            page=page_number,
            with_payloads=policy.may(request.user, "dead_letter.payload", pipeline.workspace_id),
        )
    except ApplicationError as exc:
        context["error"] = exc.message
    return render(request, "pipelines/partials/dead_letters.html", context)


@login_required
@require_GET
def dead_letter_payload(request: HttpRequest, pk: int) -> HttpResponse:
    """One dead letter in full (`?topic=&partition=&offset=`): its payload, indented when it is JSON (htmx
    partial for the payload dialog)."""
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    policy.require(request.user, "dead_letter.payload", pipeline.workspace_id)
    try:
        where = {
            "topic": request.GET["topic"],
            "partition": int(request.GET["partition"]),
            "offset": int(request.GET["offset"]),
        }
    except (KeyError, ValueError):
        raise Http404("No such dead letter.") from None
    context: dict = {"pipeline": pipeline}
    try:
        letter = dead_letters.dead_letter_get(pipeline=pipeline, **where)
    except ApplicationError as exc:
        context["error"] = exc.message
    else:
        if letter is None:
            context["error"] = "This dead letter is gone (replayed or purged)."
        else:
            context.update(letter=letter, **_readable_payload(letter.raw))
    return render(request, "pipelines/partials/dead_letter_payload.html", context)


def _readable_payload(raw: str) -> dict:
    """The payload as the dialog shows it: indented JSON when it parses, else as it is with why it is not JSON."""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {"pretty": raw, "is_json": False, "json_error": str(exc)}
    return {"pretty": json.dumps(value, indent=2, ensure_ascii=False), "is_json": True, "json_error": ""}


@login_required
@require_GET
def dead_letter_replay_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """The replay dialog: how many dead letters a replay sends, and how many will fail again, and why."""
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    context: dict = {"pipeline": pipeline}
    try:
        context["forecast"] = dead_letters.dead_letters_replay_forecast(pipeline=pipeline)
    except ApplicationError as exc:
        context["error"] = exc.message
    return render(request, "pipelines/partials/dead_letter_replay.html", context)


@login_required
@require_GET
def dead_letter_download_view(request: HttpRequest, pk: int) -> StreamingHttpResponse | HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    policy.require(request.user, "dead_letter.payload", pipeline.workspace_id)
    try:
        return dead_letter_download(pipeline)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return _back_to_dead_letters(pipeline.pk)


@login_required
@require_POST
def dead_letter_replay(request: HttpRequest, pk: int) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    policy.require(request.user, "dead_letter.replay", pipeline.workspace_id)
    try:
        result = dead_letters.dead_letters_replay(pipeline=pipeline, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        text = f"Replayed {result.replayed} dead letter{'s' if result.replayed != 1 else ''} to their topics."
        if result.failed:
            messages.warning(request, f"{text} {result.failed} could not be sent and stay: {result.error}")
        else:
            messages.success(request, text + (f" {result.remaining} remain: replay again." if result.remaining else ""))
    return _back_to_dead_letters(pipeline.pk)


@login_required
@require_POST
def dead_letter_purge(request: HttpRequest, pk: int) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    policy.require(request.user, "dead_letter.purge", pipeline.workspace_id)
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Purge needs confirmation.")
        return _back_to_dead_letters(pipeline.pk)
    try:
        purged = dead_letters.dead_letters_purge(pipeline=pipeline, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Deleted {purged} dead letter{'s' if purged != 1 else ''}.")
    return _back_to_dead_letters(pipeline.pk)


def _back_to_dead_letters(pk: int) -> HttpResponse:
    return redirect(reverse("pipelines:detail", kwargs={"pk": pk}) + "#dead-letters")
