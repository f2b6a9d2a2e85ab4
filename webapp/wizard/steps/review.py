"""Step 9: review, name, save and deploy.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest
from django.shortcuts import redirect

from clearflow_spec import spec as specmod
from webapp.alerts import selectors as alert_selectors
from webapp.alerts.conditions import RULE_PARAMS
from webapp.alerts.models import RuleKind
from webapp.core.exceptions import ApplicationError
from webapp.core.forms import add_validation_errors
from webapp.pipelines import selectors as pipeline_selectors
from webapp.pipelines import services as pipeline_services
from webapp.pipelines import stored_specs
from webapp.pipelines.lifecycle import JOB_WANTED
from webapp.wizard import draft_spec, forms
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_discard, draft_update_section
from webapp.wizard.steps import SLUGS, STEPS
from webapp.wizard.steps.common import (
    clickhouse_connection_of,
    draft_join,
    draft_topics,
    draft_workspace,
    initial_from,
    kafka_connection_of,
    schema_fields,
    schema_registry_connection_of,
)
from webapp.wizard.steps.dedup import expected_state, window_advice
from webapp.workspaces import policy


def _default_name(draft: WizardDraft) -> str:
    if draft.pipeline_id:
        return draft.pipeline.name
    topics = draft_topics(draft)
    table = draft.spec.sink.table or "clickhouse"
    base = f"{topics[0] if topics else 'events'}-to-{table}"
    return re.sub(r"[^A-Za-z0-9_.-]", "-", base)[:100]


def _spec_issues(error: specmod.SpecError) -> list[dict[str, str]]:
    """Each problem of the spec with the step that fixes it."""
    return [{"path": i.path, "message": i.message, "step": draft_spec.step_for_path(i.path)} for i in error.errors]


def review_context(
    request: HttpRequest, draft: WizardDraft, name: str, starting_offsets: str, live: bool
) -> dict[str, Any]:
    """The spec built from the draft, checked by the pipelines service (`parsed`: the typed spec to save, None
    while there are problems), with each problem's step."""
    kafka = kafka_connection_of(request, draft)
    clickhouse = clickhouse_connection_of(request, draft)
    registry = schema_registry_connection_of(request, draft)
    spec = draft_spec.complete_spec(draft.spec, name=name or "unnamed", starting_offsets=starting_offsets)
    issues: list[dict[str, str]] = []
    warning = ""
    parsed = None
    if kafka is None or clickhouse is None:
        issues.append(
            {
                "path": "",
                "message": "Both connections are needed (steps 1 and 7).",
                "step": "kafka" if kafka is None else "clickhouse",
            }
        )
    else:
        try:
            parsed = pipeline_services.pipeline_validate(
                spec=spec,
                name=name or "unnamed",
                kafka_connection=kafka,
                clickhouse_connection=clickhouse,
                schema_registry_connection=registry,
                check_live=live,
            )
        except specmod.SpecError as exc:
            issues = _spec_issues(exc)
        except ApplicationError as exc:
            warning = f"Could not check against the live systems: {exc.message}"
    shown = (
        parsed.to_dict()
        if parsed is not None
        else stored_specs.merge_connections(
            spec,
            name=name or "unnamed",
            kafka_connection=kafka,
            clickhouse_connection=clickhouse,
            schema_registry_connection=registry,
        )
    )
    if not name:
        shown = {**shown, "name": ""}
    steps_by_slug = {s.slug: s for s in STEPS}
    for issue in issues:
        issue["step_title"] = steps_by_slug[issue["step"]].title
        issue["step_number"] = SLUGS.index(issue["step"]) + 1
    return {
        "parsed": parsed,
        "spec_json": json.dumps(shown, indent=2),
        "issues": [i for i in issues if i["path"] != "name"],
        "name_issues": [i["message"] for i in issues if i["path"] == "name"],
        "live_warning": warning,
        "kafka_connection": kafka,
        "clickhouse_connection": clickhouse,
        "schema_registry_connection": registry,
        "summary": review_summary(draft),
        "window_advice": window_advice(draft),
        "expected_state": expected_state(draft, kafka, live=live),
        # The alert rules a new pipeline gets, and where they go: every enabled channel of the workspace.
        "alert_rules": [RuleKind(kind).label for kind in RULE_PARAMS],
        "alert_channels": (
            channels := list(
                alert_selectors.alert_channel_list(user=request.user, workspace=draft_workspace(request, draft))
            )
        ),
        "alerts_reach_someone": any(c.enabled for c in channels),
        "edit": edit_context(draft, spec, parsed, kafka=kafka, clickhouse=clickhouse, registry=registry),
    }


def _shown(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def edit_context(
    draft: WizardDraft, spec: dict[str, Any], parsed: Any, *, kafka: Any, clickhouse: Any, registry: Any
) -> dict[str, Any] | None:
    """For an edit: the version it is compared with (the running one, else the saved one), what changes from it
    leaf by leaf, and whether the pipeline has run (its table exists; it reads on from its checkpoint)."""
    if not draft.pipeline_id:
        return None
    pipeline = draft.pipeline
    running = pipeline.status in JOB_WANTED and pipeline.deployed_version is not None
    base = pipeline.deployed_version if running else pipeline.current_version
    has_run = pipeline.deployed_version_id is not None and pipeline.runs.exists()
    changes: list[dict[str, str]] | None = None
    if parsed is not None and base is not None:
        try:
            diff = pipeline_selectors.pipeline_changes(
                pipeline=pipeline,
                spec=spec,
                kafka_connection=kafka,
                clickhouse_connection=clickhouse,
                schema_registry_connection=registry,
                version=base,
            )
        except (specmod.SpecError, ApplicationError):
            diff = None
        if diff is not None:
            changes = [
                {"path": c.path.removeprefix("spec."), "current": _shown(c.current), "proposed": _shown(c.proposed)}
                for c in diff.changes
            ]
    base_sink = base.stored_spec.get("sink", {}) if base is not None else {}
    same_table = (
        base_sink.get("table") == draft.spec.sink.table
        and (base_sink.get("clickhouse") or {}).get("database") == draft.spec.sink.clickhouse.database
    )
    return {
        "pipeline": pipeline,
        "base": base,
        "running": running,
        "has_run": has_run,
        "changes": changes,
        "table_made": has_run and same_table,  # the pipeline made it on its first deploy: it is there now
    }


def review_summary(draft: WizardDraft) -> dict[str, Any]:
    spec = draft.spec
    return {
        "topics": draft_topics(draft),
        "topic_pattern": spec.source.topic_pattern or "",
        "field_count": len(schema_fields(draft)),
        "dedup": spec.dedup,
        "join": draft_join(draft),
        "filter": spec.filter or "",
        "computed": spec.transforms or [],
        "database": spec.sink.clickhouse.database,
        "table": spec.sink.table,
        "table_mode": draft.section("clickhouse").get("table_mode"),
        "engine": spec.sink.engine or "MergeTree",
        "order_by": spec.sink.order_by or [],
        "columns": spec.sink.columns or [],
    }


def review_show(request, draft, source):
    stored = draft.section("review")
    initial = initial_from(source, forms.ReviewForm) if source else {}
    initial.setdefault("name", stored.get("name") or _default_name(draft))
    initial.setdefault("starting_offsets", draft.spec.source.starting_offsets or "earliest")
    form = forms.ReviewForm(initial=initial)
    context = review_context(request, draft, initial["name"], initial["starting_offsets"], live=True)
    return {"form": form, **context}


def review_submit(request, draft):
    form = forms.ReviewForm(request.POST)
    action = request.POST.get("action", "deploy")
    if not form.is_valid():
        return {
            "form": form,
            **review_context(
                request,
                draft,
                request.POST.get("name", ""),
                request.POST.get("starting_offsets", "earliest"),
                live=False,
            ),
        }
    name = form.cleaned_data["name"].strip()
    starting = form.cleaned_data["starting_offsets"]

    def set_starting_offsets(spec: Any) -> None:
        spec.source.starting_offsets = starting

    draft_update_section(draft=draft, step="review", changes={"name": name}, spec_edit=set_starting_offsets)
    context = review_context(request, draft, name, starting, live=True)
    context["form"] = form
    for message in context["name_issues"]:
        form.add_error("name", message)
    if context["issues"] or context["name_issues"]:
        return context
    kafka, clickhouse = context["kafka_connection"], context["clickhouse_connection"]
    registry = context["schema_registry_connection"]
    # Asked for when an edit cannot continue from a running pipeline's checkpoint (see pipeline_deploy).
    checkpoint = request.POST.get("checkpoint") if request.POST.get("checkpoint") in ("keep", "fresh") else None
    accepted = draft.section("mapping").get("accept_dead_letters") or []
    workspace = draft_workspace(request, draft)
    policy.require(request.user, "pipeline.edit" if draft.pipeline_id else "pipeline.create", workspace)
    if action == "deploy":
        policy.require(request.user, "pipeline.deploy", workspace)
    try:
        with transaction.atomic():
            if draft.pipeline_id:
                pipeline = pipeline_services.pipeline_update(
                    pipeline=draft.pipeline,
                    user=request.user,
                    name=name,
                    spec=context["parsed"],
                    kafka_connection=kafka,
                    clickhouse_connection=clickhouse,
                    schema_registry_connection=registry,
                    note="edited in the wizard",
                    checkpoint=checkpoint,
                    accept_dead_letters=accepted,
                )
            else:
                pipeline = pipeline_services.pipeline_create(
                    owner=request.user,
                    workspace=workspace,
                    name=name,
                    kafka_connection=kafka,
                    clickhouse_connection=clickhouse,
                    schema_registry_connection=registry,
                    spec=context["parsed"],
                    note="created in the wizard",
                    accept_dead_letters=accepted,
                )
            if action == "deploy" and pipeline.status != "deploy_requested":  # an edit may have redeployed it
                pipeline = pipeline_services.pipeline_deploy(
                    pipeline=pipeline, user=request.user, checkpoint=checkpoint
                )
            draft_discard(draft=draft)
    except ValidationError as exc:
        add_validation_errors(form, exc)
        return context
    except specmod.SpecError as exc:
        context["issues"] = _spec_issues(exc)
        return context
    except ApplicationError as exc:
        form.add_error(None, exc.message)
        context["checkpoint_problems"] = exc.extra.get("checkpoint_problems", [])
        return context
    if action == "deploy":
        messages.success(request, f"Pipeline {pipeline.name} saved; deploy requested.", extra_tags="pending")
    else:
        messages.success(request, f"Pipeline {pipeline.name} saved (not deployed).")
    return redirect("pipelines:detail", pk=pipeline.pk)
