"""The pipeline page's live parts: the metrics summary (htmx partial; the charts read the API themselves) and
the dead letters (list partial, download, replay, purge). Someone else's pipeline is a 404."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from webapp.core.exceptions import ApplicationError
from webapp.pipelines import dead_letters, metrics_history
from webapp.pipelines import selectors as pipeline_selectors
from webapp.pipelines.metrics import MetricsUnavailableError
from webapp.pipelines.observe_apis import dead_letter_download

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
    return render(request, "pipelines/partials/pipeline_metrics.html", context)


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
        context["page"] = dead_letters.dead_letter_page(pipeline=pipeline, page=page_number)
    except ApplicationError as exc:
        context["error"] = exc.message
    return render(request, "pipelines/partials/dead_letters.html", context)


@login_required
@require_GET
def dead_letter_download_view(request: HttpRequest, pk: int) -> StreamingHttpResponse | HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    try:
        return dead_letter_download(pipeline)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return _back_to_dead_letters(pipeline.pk)


@login_required
@require_POST
def dead_letter_replay(request: HttpRequest, pk: int) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    try:
        result = dead_letters.dead_letters_replay(pipeline=pipeline)
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
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Purge needs confirmation.")
        return _back_to_dead_letters(pipeline.pk)
    try:
        purged = dead_letters.dead_letters_purge(pipeline=pipeline)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Deleted {purged} dead letter{'s' if purged != 1 else ''}.")
    return _back_to_dead_letters(pipeline.pk)


def _back_to_dead_letters(pk: int) -> HttpResponse:
    return redirect(reverse("pipelines:detail", kwargs={"pk": pk}) + "#dead-letters")
