"""The pipeline pages: the list (home), a pipeline's page with its run state, its spec download, its actions and
its table's exactly-once check (the metrics and dead letters are in `observe_views`). Editing is the wizard's.

Plain function views: they find the user's objects through selectors (someone else's is a 404), call
services, and render a page or, for htmx requests, a small partial template.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from clearflow_spec import spec as specmod
from webapp.activity.selectors import activity_list
from webapp.core.exceptions import ApplicationError
from webapp.core.responses import json_attachment
from webapp.pipelines import exactly_once, job_log, metrics_history
from webapp.pipelines import selectors as pipeline_selectors
from webapp.pipelines import services as pipeline_services
from webapp.pipelines.lifecycle import PipelineStatus
from webapp.pipelines.models import Pipeline
from webapp.pipelines.rollback import pipeline_rollback
from webapp.workspaces import policy
from webapp.workspaces.current import current_workspace

EXACTLY_ONCE_PARTIAL = "pipelines/partials/exactly_once.html"
# The job log: ClearFlow's last lines, read from a longer tail so that Spark's stack traces (hidden until asked
# for) do not push them off the page.
LOG_LINES_SHOWN = 100
LOG_LINES_READ = 600
# Actions a worker carries out: their flash stays until the job has started or stopped (pipeline_run_state.html
# removes it then), unless the action was done at once.
PENDING_ACTIONS = ("deploy", "stop", "resume", "rollback")
UNDER_WAY = (PipelineStatus.DEPLOY_REQUESTED, PipelineStatus.STOP_REQUESTED)
# The page's actions by the policy's names (webapp.workspaces.policy).
PAGE_ACTIONS = {
    "deploy": "pipeline.deploy",
    "stop": "pipeline.stop",
    "resume": "pipeline.resume",
    "delete": "pipeline.delete",
    "reset-checkpoint": "pipeline.checkpoint_reset",
    "rollback": "pipeline.deploy",
}


@login_required
@require_GET
def pipeline_list(request: HttpRequest) -> HttpResponse:
    pipelines = list(pipeline_selectors.pipeline_list(user=request.user, workspace=current_workspace(request)))
    throughput = metrics_history.current_throughput(pipelines)
    for pipeline in pipelines:
        pipeline.throughput = throughput.get(pipeline.pk)
    return render(request, "pipelines/pipeline_list.html", {"pipelines": pipelines})


@login_required
@require_GET
def pipeline_detail(request: HttpRequest, pk: int) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    parts = _page_parts(pipeline)
    parts["activity"] = activity_list(user=request.user, object_type="pipeline", object_id=pipeline.pk)[:20]
    return render(request, "pipelines/pipeline_detail.html", parts)


@login_required
@require_GET
def pipeline_run_state(request: HttpRequest, pk: int) -> HttpResponse:
    """The partial with the status history, the runs and the job log (refreshed every few seconds); with the page's
    head, actions and version cards when the pipeline changed since the page drew them (`shown`)."""
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    try:
        raw_lines, log_error = pipeline_selectors.pipeline_log(pipeline=pipeline, lines=LOG_LINES_READ), ""
    except ApplicationError as exc:
        raw_lines, log_error = [], exc.message
    log_lines = job_log.shown_lines(job_log.job_log_lines(raw_lines), clearflow_lines=LOG_LINES_SHOWN)
    changed = request.GET.get("shown") != _shown(pipeline)
    return render(
        request,
        "pipelines/partials/pipeline_run_state.html",
        {
            **(_page_parts(pipeline) if changed else {"pipeline": pipeline}),
            "page_changed": changed,
            "transitions": pipeline_selectors.pipeline_transition_list(pipeline=pipeline)[:20],
            "runs": pipeline_selectors.pipeline_run_list(pipeline=pipeline)[:10],
            "log_lines": log_lines,
            "spark_line_count": sum(1 for line in log_lines if line.is_spark),
            "log_error": log_error,
        },
    )


def _shown(pipeline: Pipeline) -> str:
    """A digest of what the page's head and version cards show of the pipeline: its status and versions."""
    parts = (
        pipeline.status,
        pipeline.status_message,
        pipeline.status_changed_at,
        pipeline.restart_at,
        pipeline.current_version_id,
        pipeline.deployed_version_id,
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _page_parts(pipeline: Pipeline) -> dict[str, Any]:
    """What the page's head (status, actions), Source and Destination cards and version cards are drawn from."""
    spec = _readable_spec(pipeline)
    return {
        "pipeline": pipeline,
        "shown": _shown(pipeline),
        "versions": pipeline_selectors.pipeline_version_list(pipeline=pipeline),
        "spec": spec,
        "spec_json": json.dumps(spec, indent=2),
        "checkpoint_problems": pipeline_services.pipeline_checkpoint_problems(pipeline=pipeline),
        "topics_read": metrics_history.topics_read_or_none(pipeline),
    }


@login_required
@require_GET
def pipeline_spec_download(request: HttpRequest, pk: int) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    return json_attachment(_readable_spec(pipeline), f"{pipeline.name}.json")


@login_required
@require_POST
def pipeline_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    kwargs: dict = {}
    if action in ("deploy", "rollback") and request.POST.get("checkpoint") in ("keep", "fresh"):
        kwargs["checkpoint"] = request.POST["checkpoint"]
    if action == "rollback":
        number = request.POST.get("version", "")
        kwargs["version"] = int(number) if number.isdigit() else 0
    if action == "delete":
        kwargs["remove_checkpoint"] = request.POST.get("remove_checkpoint") == "on"
    service = {
        "deploy": pipeline_services.pipeline_deploy,
        "stop": pipeline_services.pipeline_stop,
        "resume": pipeline_services.pipeline_resume,
        "delete": pipeline_services.pipeline_delete,
        "reset-checkpoint": pipeline_services.pipeline_checkpoint_reset,
        "rollback": pipeline_rollback,
    }.get(action)
    if service is None:
        raise Http404("No such action.")
    policy.require(request.user, PAGE_ACTIONS[action], pipeline.workspace_id)
    try:
        result = service(pipeline=pipeline, user=request.user, **kwargs)
    except ValidationError as exc:  # a version the pipeline does not have
        messages.error(request, " ".join(exc.messages))
    except (ApplicationError, specmod.SpecError) as exc:
        messages.error(request, getattr(exc, "message", str(exc)))
    else:
        if action == "delete":
            messages.success(request, f"Pipeline {pipeline.name} deleted; its ClickHouse rows stay.")
            return redirect("pipelines:list")
        if action in PENDING_ACTIONS and isinstance(result, Pipeline) and result.status not in UNDER_WAY:
            # Done at once (a deploy no job had taken yet is withdrawn): say what happened, not what was asked for.
            messages.success(request, result.status_message or f"The pipeline is {result.get_status_display()}.")
            return redirect("pipelines:detail", pk=pipeline.pk)
        messages.success(
            request,
            {
                "deploy": "Deploy requested.",
                "rollback": f"Deploy of version {kwargs.get('version')} requested (as a new version).",
                "stop": "Stop requested.",
                "resume": "Resume requested.",
                "reset-checkpoint": "Checkpoint removed: the next start reads from the starting offsets.",
            }[action],
            extra_tags="pending" if action in PENDING_ACTIONS else "",
        )
    return redirect("pipelines:detail", pk=pipeline.pk)


def _readable_spec(pipeline: Pipeline) -> dict[str, Any]:
    """The current spec's JSON in the spec module's field order (the database keeps JSON keys in its own order);
    as stored when today's rules refuse it."""
    try:
        return pipeline.spec.to_dict() if pipeline.spec else {}
    except specmod.SpecError:
        return pipeline.stored_spec or {}


@login_required
@require_GET
def pipeline_exactly_once(request: HttpRequest, pk: int) -> HttpResponse:
    """Does the pipeline's table drop a replayed insert? (htmx partial; the same one the wizard's table step shows)"""
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    result, unknown = exactly_once.pipeline_insert_dedup(pipeline=pipeline)
    return render(request, EXACTLY_ONCE_PARTIAL, {"pipeline": pipeline, "result": result, "error": unknown})


@login_required
@require_POST
def pipeline_exactly_once_apply(request: HttpRequest, pk: int) -> HttpResponse:
    """Run the ALTER statement that makes the pipeline's table drop replayed inserts."""
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    policy.require(request.user, "pipeline.edit", pipeline.workspace_id)
    context: dict = {"pipeline": pipeline}
    try:
        exactly_once.pipeline_table_dedup_enable(pipeline=pipeline)
    except ApplicationError as exc:
        context["apply_error"] = exc.message
    context["result"], context["error"] = exactly_once.pipeline_insert_dedup(pipeline=pipeline)
    return render(request, EXACTLY_ONCE_PARTIAL, context)
