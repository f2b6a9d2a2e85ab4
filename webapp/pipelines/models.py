"""Pipelines and their versions.

A pipeline's spec lives in `PipelineVersion.spec`: every edit adds a version and keeps the old ones;
`Pipeline.current_version` points at the newest, `Pipeline.deployed_version` at the one last handed to the
worker. The stored spec never holds secrets: the connections are foreign keys, and their addresses and
credentials are put into the job's spec only when it is built for the worker (`pipeline_job_spec`).

Status changes go through `Pipeline.transition()` (compare-and-set), never through `save()`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from webapp.core.models import TimeStampedModel


class PipelineStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    DEPLOY_REQUESTED = "deploy_requested", "Deploy requested"
    RUNNING = "running", "Running"
    STOP_REQUESTED = "stop_requested", "Stop requested"
    STOPPED = "stopped", "Stopped"
    FAILED = "failed", "Failed"


class Pipeline(TimeStampedModel):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pipelines")
    name = models.CharField(max_length=100)
    status = models.CharField(
        max_length=20, choices=PipelineStatus.choices, default=PipelineStatus.DRAFT, db_index=True
    )
    status_message = models.TextField(blank=True, default="")
    status_changed_at = models.DateTimeField(default=timezone.now)
    kafka_connection = models.ForeignKey(
        "connections.KafkaConnection", on_delete=models.PROTECT, related_name="pipelines"
    )
    clickhouse_connection = models.ForeignKey(
        "connections.ClickHouseConnection", on_delete=models.PROTECT, related_name="pipelines"
    )
    current_version = models.ForeignKey(
        "PipelineVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    deployed_version = models.ForeignKey(
        "PipelineVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    deploy_requested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="pipeline_unique_name_per_owner")]

    def __str__(self) -> str:
        return self.name

    @property
    def job_name(self) -> str:
        """The name the Spark job runs under: its metrics key in Redis and its ClickHouse dedup tokens.

        From the id, not the name: names are unique per owner only, and a rename must not make a running job
        look like another one (or its replayed batches look new to ClickHouse).
        """
        return f"pipeline-{self.pk}"

    @property
    def spec(self) -> dict[str, Any] | None:
        """The current version's spec JSON (without secrets)."""
        return self.current_version.spec if self.current_version_id else None

    def transition(self, *, from_statuses: Iterable[str], to_status: str, message: str = "", **extra: Any) -> bool:
        """Compare-and-set: move to `to_status` only if the row's status is one of `from_statuses`.

        Returns whether this call made the change; on success the instance is refreshed from the row.
        `extra` sets more columns in the same UPDATE (e.g. deployed_version, deploy_requested_at).
        """
        now = timezone.now()
        changed = Pipeline.objects.filter(pk=self.pk, status__in=list(from_statuses)).update(
            status=to_status, status_message=message, status_changed_at=now, updated_at=now, **extra
        )
        try:
            self.refresh_from_db()
        except Pipeline.DoesNotExist:  # deleted meanwhile: nothing changed
            return False
        return changed == 1


class PipelineVersion(models.Model):
    pipeline = models.ForeignKey(Pipeline, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    spec = models.JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    note = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["pipeline_id", "-number"]
        constraints = [models.UniqueConstraint(fields=["pipeline", "number"], name="pipeline_version_unique_number")]

    def __str__(self) -> str:
        return f"{self.pipeline.name} v{self.number}"
