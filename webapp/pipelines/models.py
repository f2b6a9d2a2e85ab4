"""Pipelines and their versions.

A pipeline's spec lives in `PipelineVersion.spec`, a `PipelineSpec` (`webapp.pipelines.spec_field`): every edit
adds a version and keeps the old ones; `Pipeline.current_version` points at the newest,
`Pipeline.deployed_version` at the one last handed to the worker. The stored spec never holds secrets: the
connections are foreign keys, and their addresses and credentials are put into the job's spec only when it is
built for the worker (`pipeline_job_spec`).

Status changes go through `Pipeline.transition(action)` (compare-and-set, allowed only as the lifecycle's
table says: `webapp.pipelines.lifecycle`), never through `save()`; each one is recorded as a
`PipelineTransition`. Every attempt to run a pipeline's job is a `PipelineRun`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from webapp.core.models import TimeStampedModel
from webapp.pipelines.lifecycle import Action, PipelineStatus, next_status
from webapp.pipelines.spec_field import PipelineSpecField

if TYPE_CHECKING:
    from clearflow_spec.spec import PipelineSpec


class Pipeline(TimeStampedModel):
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="pipelines")
    # Who created it; access is by workspace membership (webapp.workspaces.policy).
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
    # Avro in the Confluent wire format: the registry holding the writer schemas (the spec's source.schema_registry).
    schema_registry_connection = models.ForeignKey(
        "connections.SchemaRegistryConnection",
        on_delete=models.PROTECT,
        related_name="pipelines",
        null=True,
        blank=True,
    )
    current_version = models.ForeignKey(
        "PipelineVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    deployed_version = models.ForeignKey(
        "PipelineVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    deploy_requested_at = models.DateTimeField(null=True, blank=True)
    # Set by the watcher after a failure: when the next automatic restart is due (None: none planned).
    restart_at = models.DateTimeField(null=True, blank=True)
    # The next start removes the checkpoint first ("start fresh"); cleared when that start happens.
    reset_checkpoint = models.BooleanField(default=False)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="pipeline_unique_name_per_workspace")]

    def __str__(self) -> str:
        return self.name

    @property
    def job_name(self) -> str:
        """The name the Spark job runs under: its metrics key in Redis and its ClickHouse dedup tokens.

        From the id, not the name: names are unique per workspace only, and a rename must not make a running job
        look like another one (or its replayed batches look new to ClickHouse).
        """
        return f"pipeline-{self.pk}"

    @property
    def spec(self) -> PipelineSpec | None:
        """The current version's spec (secrets masked). SpecError when today's rules refuse the stored one."""
        return self.current_version.spec if self.current_version_id else None

    @property
    def stored_spec(self) -> dict[str, Any] | None:
        """The current version's spec JSON as stored, for showing it (also when today's rules refuse it)."""
        return self.current_version.stored_spec if self.current_version_id else None

    def transition(self, action: Action, *, message: str = "", **extra: Any) -> bool:
        """Compare-and-set: apply `action` if the lifecycle's table allows it from the row's status.

        Returns whether this call made the change; on success the instance is refreshed from the row and the
        change is recorded as a `PipelineTransition` (from, to, reason). `extra` sets more columns in the same
        UPDATE (e.g. deployed_version, deploy_requested_at).
        """
        for _ in range(3):  # the status read below may change under us: then read again
            current = Pipeline.objects.filter(pk=self.pk).values_list("status", flat=True).first()
            to_status = None if current is None else next_status(current, action)
            if to_status is None:
                if current is not None:
                    self.refresh_from_db()
                return False
            now = timezone.now()
            changed = Pipeline.objects.filter(pk=self.pk, status=current).update(
                status=to_status, status_message=message, status_changed_at=now, updated_at=now, **extra
            )
            if changed:
                PipelineTransition.objects.create(
                    pipeline_id=self.pk, at=now, from_status=current, to_status=to_status, reason=message
                )
                self.refresh_from_db()
                return True
        return False


class PipelineVersion(models.Model):
    pipeline = models.ForeignKey(Pipeline, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    spec = PipelineSpecField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    note = models.CharField(max_length=255, blank=True, default="")
    # Mapped fields whose values the owner accepted to see in the dead-letter table although the sample showed
    # none of them fits (the wizard's "accept dead letters" boxes): kept so that an edit shows them ticked again.
    # Not part of the spec: the job sends what does not fit to the dead letters either way.
    accept_dead_letters = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["pipeline_id", "-number"]
        constraints = [models.UniqueConstraint(fields=["pipeline", "number"], name="pipeline_version_unique_number")]

    def __str__(self) -> str:
        return f"{self.pipeline.name} v{self.number}"

    @property
    def stored_spec(self) -> dict[str, Any]:
        """The spec JSON as stored, for showing it (also when today's rules refuse it)."""
        return self._meta.get_field("spec").value_from_object(self)


class PipelineTransition(models.Model):
    """One status change: when, from, to, and why (the history the pipeline page and the API show)."""

    pipeline = models.ForeignKey(Pipeline, on_delete=models.CASCADE, related_name="transitions")
    at = models.DateTimeField(default=timezone.now)
    from_status = models.CharField(max_length=20, choices=PipelineStatus.choices)
    to_status = models.CharField(max_length=20, choices=PipelineStatus.choices)
    reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["pipeline", "-at"], name="pipeline_transition_recent")]

    def __str__(self) -> str:
        return f"{self.pipeline_id}: {self.from_status} -> {self.to_status}"


class RunOutcome(models.TextChoices):
    ACTIVE = "", "Active"
    STOPPED = "stopped", "Stopped"
    FAILED = "failed", "Failed"
    REPLACED = "replaced", "Replaced by a new version"
    # Re-sized while it ran (`clearflow_spec.pace`): stopped to start again from its checkpoint, sized for the rate.
    RESIZED = "resized", "Re-sized"
    # The local stack stopped (`make up` ended): the pipeline stays deployed and starts again with the stack.
    STACK_STOPPED = "stack_stop", "Stopped with the stack"


class PipelineRun(models.Model):
    """One attempt to run a pipeline's job: which version, where its process is, how it ended.

    A run is active while `ended_at` is null; at most one run per pipeline is active (a partial unique
    constraint), which is what keeps two workers or two beat ticks from starting the same pipeline twice.
    """

    pipeline = models.ForeignKey(Pipeline, on_delete=models.CASCADE, related_name="runs")
    version = models.ForeignKey(PipelineVersion, on_delete=models.SET_NULL, null=True, related_name="runs")
    attempt = models.PositiveIntegerField(default=1, help_text="1 for a deploy or resume, then 2, 3... for restarts")
    host = models.CharField(max_length=255, blank=True, default="")
    pid = models.PositiveIntegerField(null=True, blank=True, help_text="the job's supervising process (its group)")
    process_started = models.FloatField(null=True, blank=True, help_text="the process's start time (epoch s)")
    spark_app_id = models.CharField(max_length=100, blank=True, default="")
    spark_master = models.CharField(max_length=255, blank=True, default="")
    driver_memory = models.CharField(max_length=20, blank=True, default="", help_text="the heap it was started with")
    start = models.TextField(
        blank=True, default="", help_text="how the job started: in a standby job, or cold (and why not in a standby)"
    )
    run_dir = models.CharField(max_length=500, blank=True, default="")
    log_path = models.CharField(max_length=500, blank=True, default="")
    checkpoint = models.CharField(max_length=500, blank=True, default="")
    started_at = models.DateTimeField(default=timezone.now)
    running_at = models.DateTimeField(null=True, blank=True, help_text="when the streaming query had started")
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    killed_at = models.DateTimeField(null=True, blank=True, help_text="when a stop was forced (SIGKILL)")
    ended_at = models.DateTimeField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=10, choices=RunOutcome.choices, blank=True, default=RunOutcome.ACTIVE)
    reason = models.TextField(blank=True, default="", help_text="why it ended, in words: what happened, what to change")
    # A failed run's cause: a stable code of `clearflow_spec.failures` (out_of_memory, clickhouse_unreachable, ...).
    cause = models.CharField(max_length=40, blank=True, default="")
    log_tail = models.TextField(blank=True, default="", help_text="a failed run's last log lines")
    # What the job was sized with (`clearflow_spec.job_sizing.JobResources.sizing_record`): the rate, light or not,
    # heap, state memory and trigger; the worker's re-sizing (`worker.lag`) compares the pace it sees with it.
    sizing = models.JSONField(default=dict, blank=True)
    # Set once when the worker re-sizes the running job: {"events_per_second": ..., "reason": "..."}; the job then
    # stops and the next run starts sized for that rate.
    resize = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["pipeline"], condition=models.Q(ended_at__isnull=True), name="pipeline_one_active_run"
            )
        ]

    def __str__(self) -> str:
        return f"{self.pipeline_id} run {self.pk}"

    @property
    def active(self) -> bool:
        return self.ended_at is None
