"""Admin for pipelines: status, versions (read-only, inline) and the deploy/stop actions, which go
through the same services as the API and the wizard (statuses are never edited by hand)."""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from clearflow_spec.spec import SpecError
from webapp.core.exceptions import ApplicationError
from webapp.pipelines import services
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineTransition, PipelineVersion
from webapp.workspaces import policy
from webapp.workspaces.admin import WorkspaceScopedAdmin


class PipelineVersionInline(admin.TabularInline):
    model = PipelineVersion
    fk_name = "pipeline"
    extra = 0
    can_delete = False
    fields = ("number", "created_by", "created_at", "note", "spec_json")
    readonly_fields = fields
    ordering = ("-number",)

    def has_add_permission(self, request: HttpRequest, obj: Pipeline | None = None) -> bool:
        return False

    @admin.display(description="spec")
    def spec_json(self, obj: PipelineVersion) -> str:
        return format_html("<pre style='max-height:20em;overflow:auto'>{}</pre>", json.dumps(obj.stored_spec, indent=2))


class PipelineTransitionInline(admin.TabularInline):
    model = PipelineTransition
    extra = 0
    max_num = 0
    can_delete = False
    fields = ("at", "from_status", "to_status", "reason")
    readonly_fields = fields
    ordering = ("-at", "-id")
    verbose_name_plural = "status history"


class PipelineRunInline(admin.TabularInline):
    model = PipelineRun
    extra = 0
    max_num = 0
    can_delete = False
    fields = (
        "started_at",
        "version",
        "attempt",
        "host",
        "pid",
        "spark_app_id",
        "ended_at",
        "exit_code",
        "outcome",
        "reason",
    )
    readonly_fields = fields
    ordering = ("-started_at", "-id")
    verbose_name_plural = "runs"


@admin.register(Pipeline)
class PipelineAdmin(WorkspaceScopedAdmin):
    list_display = (
        "name",
        "workspace",
        "owner",
        "status",
        "reads",
        "current_version_number",
        "deployed_version_number",
        "updated_at",
    )
    list_filter = ("status", "workspace")
    search_fields = ("name", "owner__username", "workspace__name")
    list_select_related = ("owner", "workspace", "current_version", "deployed_version")
    inlines = [PipelineTransitionInline, PipelineRunInline, PipelineVersionInline]
    actions = ["deploy_selected", "stop_selected", "resume_selected"]
    fields = (
        "name",
        "workspace",
        "owner",
        "status",
        "status_message",
        "status_changed_at",
        "reads",
        "kafka_connection",
        "clickhouse_connection",
        "current_version",
        "deployed_version",
        "deploy_requested_at",
        "restart_at",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A pipeline needs a valid spec: create it in the wizard or through the API.
        return False

    def delete_model(self, request: HttpRequest, obj: Pipeline) -> None:
        # Through the service: a running job is stopped; ClickHouse rows and the checkpoint stay.
        services.pipeline_delete(pipeline=obj, user=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Pipeline]) -> None:
        for pipeline in queryset:
            services.pipeline_delete(pipeline=pipeline, user=request.user)

    @admin.display(description="reads")
    def reads(self, obj: Pipeline) -> str:
        """The current version's topics, and its join in words (the whole spec is in the versions below)."""
        spec = obj.stored_spec or {}
        topics = ", ".join((spec.get("source") or {}).get("topics") or [])
        join = spec.get("join")
        if not isinstance(join, dict):
            return topics
        right = ", ".join((join.get("source") or {}).get("topics") or [])
        keys = " and ".join(f"{k.get('left')} = {k.get('right')}" for k in join.get("keys") or [])
        kind, window, time = join.get("type", "inner"), join.get("window", "30m"), join.get("time", "ingestion")
        return f"{topics}, {kind} join {right} on {keys} within {window} ({time} time)"

    @admin.display(description="current version")
    def current_version_number(self, obj: Pipeline) -> int | None:
        return obj.current_version.number if obj.current_version else None

    @admin.display(description="deployed version")
    def deployed_version_number(self, obj: Pipeline) -> int | None:
        return obj.deployed_version.number if obj.deployed_version else None

    def _run(self, request: HttpRequest, queryset: QuerySet[Pipeline], service, verb: str) -> None:
        done = 0
        action = {"pipeline_deploy": "pipeline.deploy", "pipeline_stop": "pipeline.stop"}.get(
            service.__name__, "pipeline.resume"
        )
        for pipeline in queryset:
            if not self._may(request, pipeline, action):
                self.message_user(request, f"{pipeline.name}: {policy.refusal(action)}", messages.ERROR)
                continue
            try:
                service(pipeline=pipeline, user=request.user)
                done += 1
            except SpecError as exc:
                first = exc.errors[0] if exc.errors else None
                self.message_user(request, f"{pipeline.name}: spec not valid: {first}", messages.ERROR)
            except ApplicationError as exc:
                self.message_user(request, f"{pipeline.name}: {exc.message}", messages.ERROR)
        if done:
            self.message_user(request, f"{verb} {done} pipeline(s).", messages.SUCCESS)

    @admin.action(description="Deploy the selected pipelines (current version)")
    def deploy_selected(self, request: HttpRequest, queryset: QuerySet[Pipeline]) -> None:
        self._run(request, queryset, services.pipeline_deploy, "Deploy requested for")

    @admin.action(description="Stop the selected pipelines")
    def stop_selected(self, request: HttpRequest, queryset: QuerySet[Pipeline]) -> None:
        self._run(request, queryset, services.pipeline_stop, "Stop requested for")

    @admin.action(description="Resume the selected pipelines (from their checkpoints)")
    def resume_selected(self, request: HttpRequest, queryset: QuerySet[Pipeline]) -> None:
        self._run(request, queryset, services.pipeline_resume, "Resume requested for")
