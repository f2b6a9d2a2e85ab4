"""Schema changes on the pipeline page, as an htmx partial (`webapp.pipelines.schema_changes`): each new, removed
or retyped field in words, and for a new field a button that adds its column and maps it in a new version."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from clearflow_spec.spec import SpecError
from webapp.core.exceptions import ApplicationError
from webapp.pipelines import column_fill, schema_changes
from webapp.pipelines import selectors as pipeline_selectors
from webapp.workspaces import policy

TEMPLATE = "pipelines/partials/schema_changes.html"


def _context(pipeline, **extra):
    try:
        changes, error = schema_changes.pipeline_schema_changes(pipeline=pipeline), ""
    except ApplicationError as exc:
        changes, error = [], f"Could not read the schema changes: {exc.message}"
    last_fill = column_fill.last_fill_message(pipeline)
    return {"pipeline": pipeline, "changes": changes, "error": error, "last_fill": last_fill, **extra}


@login_required
@require_GET
def pipeline_schema_changes(request: HttpRequest, pk: int) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    return render(request, TEMPLATE, _context(pipeline))


@login_required
@require_POST
def pipeline_schema_change_add_column(request: HttpRequest, pk: int) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    policy.require(request.user, "pipeline.edit", pipeline.workspace_id)
    path = request.POST.get("path") or ""
    done, failed = "", ""
    try:
        pipeline, column = schema_changes.pipeline_field_add_column(pipeline=pipeline, user=request.user, path=path)
    except ApplicationError as exc:
        failed = exc.message
    except ValidationError as exc:
        failed = " ".join(exc.messages)
    except SpecError as exc:
        failed = "; ".join(f"{issue.path}: {issue.message}" for issue in exc.errors)
    else:
        version = pipeline.current_version.number
        done = f"Column `{column}` added for `{path}`; version {version} maps it."
        if pipeline.status in ("running", "deploy_requested"):
            done += (
                " The pipeline continues from its checkpoint with it; the rows written before are filled from"
                " their events read again from Kafka once it runs."
            )
        else:
            done += " The rows written before are filled from their events read again from Kafka; deploy it to"
            done += " write the field from now on."
    return render(request, TEMPLATE, _context(pipeline, done=done, failed=failed))
