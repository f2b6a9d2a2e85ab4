"""The reconciler: bring each pipeline's job in line with its status (start, mark running, watch, stop, fail, restart).

`reconcile(pipeline_id)` is the one place that acts, called by the deploy/stop tasks and, every few seconds,
by the watcher for every pipeline that may need something. It holds the pipeline's row lock while it acts
(`SELECT ... FOR UPDATE SKIP LOCKED`: a pipeline another worker is busy with is skipped, never started twice;
the partial unique index on active runs backs that up). It never waits while holding the lock: it returns how
long the caller may wait for a process to end before calling again.

Processes are `worker.jobs`' business; every state change is a service of `webapp.pipelines.services`, and
which statuses want a job, or have one to watch, is read from the lifecycle (`webapp.pipelines.lifecycle`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from spark_jobs.protocol import ExitCode
from spark_jobs.spec import SpecError
from webapp.pipelines import services
from webapp.pipelines.lifecycle import JOB_ACTIVE, JOB_WANTED
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineStatus, RunOutcome
from worker import jobs, redis_state

log = logging.getLogger(__name__)
S = PipelineStatus
LOG_LINES_IN_REASON = 20


@dataclass(frozen=True)
class WaitFor:
    """A process the caller may wait for (up to `seconds`) before reconciling again."""

    pid: int | None
    process_started: float | None
    seconds: float


def checkpoint_location(job_name: str) -> str:
    root = settings.CLEARFLOW_CHECKPOINT_ROOT
    return f"{root.rstrip('/')}/{job_name}" if "://" in root else str(Path(root) / job_name)


def reconcile(pipeline_id: int) -> WaitFor | None:
    with transaction.atomic():
        pipeline = (
            Pipeline.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("deployed_version", "kafka_connection", "clickhouse_connection")
            .filter(pk=pipeline_id)
            .first()
        )
        if pipeline is None:  # deleted, or another worker is acting on it right now
            return None
        run = PipelineRun.objects.select_related("version").filter(pipeline=pipeline, ended_at__isnull=True).first()
        if run is not None and run.host and run.host != jobs.this_host():
            return None  # a job on another host: that host's worker watches it (docs/operations.md)
        if run is not None:
            return _reconcile_run(pipeline, run)
        return _reconcile_idle(pipeline)


def reconcile_until_settled(pipeline_id: int, *, rounds: int = 4) -> None:
    """Reconcile, wait for the process it is stopping (outside the lock), and reconcile again."""
    for _ in range(rounds):
        wait = reconcile(pipeline_id)
        if wait is None:
            return
        jobs.wait_gone(pid=wait.pid, process_started=wait.process_started, timeout=max(0.0, wait.seconds))


def watch() -> int:
    """One watcher tick over every pipeline that may need something. Returns how many were looked at."""
    redis_state.beat_ticked()
    now = timezone.now()
    ids = list(
        # A job may exist in these; a failed pipeline only when its automatic restart is due.
        Pipeline.objects.filter(status__in=JOB_ACTIVE)
        .values_list("pk", flat=True)
        .union(
            Pipeline.objects.filter(status=S.FAILED, restart_at__lte=now).values_list("pk", flat=True),
            PipelineRun.objects.filter(ended_at__isnull=True).values_list("pipeline_id", flat=True),
        )
    )
    for pipeline_id in ids:
        try:
            reconcile(pipeline_id)
        except Exception:  # one broken pipeline must not stop the watcher for the others
            log.exception("pipeline %s: reconcile failed", pipeline_id)
    return len(ids)


def _reconcile_idle(pipeline: Pipeline) -> WaitFor | None:
    status = pipeline.status
    if status == S.DEPLOY_REQUESTED:
        _start(pipeline)
    elif status == S.STOP_REQUESTED:
        services.pipeline_job_stopped(pipeline=pipeline, forced=False)
    elif status == S.RUNNING:
        services.pipeline_job_failed(pipeline=pipeline, reason="The job is gone (no record of its process).")
    elif (
        status == S.FAILED
        and pipeline.restart_at
        and pipeline.restart_at <= timezone.now()
        and services.pipeline_restart(pipeline=pipeline)
    ):
        _start(pipeline)
    return None


def _reconcile_run(pipeline: Pipeline, run: PipelineRun) -> WaitFor | None:
    state = jobs.job_state(pid=run.pid, process_started=run.process_started, run_dir=run.run_dir)
    if not state.alive:
        _ended(pipeline, run, state.exit_code)
        return None
    redis_state.publish_log(pipeline.job_name, run)
    wanted = (
        pipeline.status == S.DEPLOY_REQUESTED
        and run.version_id == pipeline.deployed_version_id
        and not pipeline.reset_checkpoint
    ) or pipeline.status == S.RUNNING
    if not wanted:  # stopping, a redeploy of another version, or a status that wants no job
        return _stop(run)
    now = timezone.now()
    if run.running_at is None:
        app_id = jobs.started_application(run.log_path)
        if app_id:
            services.pipeline_run_running(pipeline=pipeline, run=run, spark_app_id=app_id)
        elif _older_than(run.started_at, settings.PIPELINE_START_TIMEOUT_SECONDS, now):
            _kill(run, f"The job did not start within {settings.PIPELINE_START_TIMEOUT_SECONDS:.0f} s.")
        return None
    if pipeline.status == S.DEPLOY_REQUESTED:  # the same version deployed again while it ran: nothing to restart
        services.pipeline_run_running(pipeline=pipeline, run=run, spark_app_id=run.spark_app_id)
        return None
    beat = redis_state.heartbeat_at(pipeline.job_name)
    last = max(filter(None, [run.running_at, beat]))
    if _older_than(last, settings.PIPELINE_HEARTBEAT_TIMEOUT_SECONDS, now):
        _kill(run, f"The job sent no heartbeat for {settings.PIPELINE_HEARTBEAT_TIMEOUT_SECONDS:.0f} s (stalled).")
    return None


def _older_than(moment: datetime, seconds: float, now: datetime) -> bool:
    return now - moment > timedelta(seconds=seconds)


def _stop(run: PipelineRun) -> WaitFor:
    """SIGTERM once (the job finishes its micro-batch); SIGKILL to the group once the stop timeout passed."""
    now = timezone.now()
    timeout = settings.PIPELINE_STOP_TIMEOUT_SECONDS
    if run.stop_requested_at is None:
        jobs.request_stop(pid=run.pid, process_started=run.process_started)
        services.pipeline_run_mark(run=run, stop_requested_at=now)
        return WaitFor(run.pid, run.process_started, timeout)
    remaining = timeout - (now - run.stop_requested_at).total_seconds()
    if remaining > 0:
        return WaitFor(run.pid, run.process_started, remaining)
    if run.killed_at is None:
        jobs.force_kill(pid=run.pid, process_started=run.process_started)
        services.pipeline_run_mark(run=run, killed_at=now)
    return WaitFor(run.pid, run.process_started, 10.0)


def _kill(run: PipelineRun, reason: str) -> None:
    log.warning("pipeline %s run %s: %s Killing it.", run.pipeline_id, run.pk, reason)
    jobs.force_kill(pid=run.pid, process_started=run.process_started)
    services.pipeline_run_mark(run=run, killed_at=timezone.now(), reason=reason)


def _ended(pipeline: Pipeline, run: PipelineRun, exit_code: int | None) -> None:
    """The run's process is gone: record how it ended and move the pipeline on."""
    jobs.remove_spec(run.run_dir)
    tail = jobs.log_tail(run.log_path, lines=200, secrets=redis_state.secrets_of(pipeline))
    redis_state.publish_log(pipeline.job_name, run, text=tail)
    stopping = run.stop_requested_at is not None
    if stopping:
        outcome = RunOutcome.STOPPED if pipeline.status == S.STOP_REQUESTED else RunOutcome.REPLACED
        services.pipeline_run_end(run=run, outcome=outcome, exit_code=exit_code, reason=run.reason or "stopped")
        if pipeline.status == S.STOP_REQUESTED:
            services.pipeline_job_stopped(pipeline=pipeline, forced=run.killed_at is not None)
        elif pipeline.status == S.DEPLOY_REQUESTED:
            _start(pipeline)  # the redeploy: the old version is down, start the new one
        return
    why = run.reason or jobs.failure_reason(tail, exit_code)
    last_lines = "\n".join(tail.splitlines()[-LOG_LINES_IN_REASON:])
    services.pipeline_run_end(
        run=run, outcome=RunOutcome.FAILED, exit_code=exit_code, reason=f"{why}\n\nLast lines of the log:\n{last_lines}"
    )
    if pipeline.status in JOB_WANTED:
        services.pipeline_job_failed(
            pipeline=pipeline, reason=f"Failed: {why}", restartable=exit_code != ExitCode.INVALID_SPEC
        )
    elif pipeline.status == S.STOP_REQUESTED:
        services.pipeline_job_stopped(pipeline=pipeline, forced=False)


def _start(pipeline: Pipeline) -> None:
    version = pipeline.deployed_version
    if version is None:
        services.pipeline_job_failed(pipeline=pipeline, reason="No version to run.", restartable=False)
        return
    since = pipeline.deploy_requested_at or pipeline.created_at
    attempt = PipelineRun.objects.filter(pipeline=pipeline, started_at__gte=since).count() + 1
    try:
        job_spec = services.pipeline_job_spec(pipeline=pipeline, version=version)
    except SpecError as exc:
        services.pipeline_job_failed(pipeline=pipeline, reason=f"The spec is not valid: {exc}", restartable=False)
        return
    checkpoint = checkpoint_location(pipeline.job_name)
    if pipeline.reset_checkpoint:
        jobs.remove_checkpoint(checkpoint)
    run_dir = Path(settings.CLEARFLOW_RUN_ROOT) / pipeline.job_name / f"{time.strftime('%Y%m%dT%H%M%S')}-{attempt}"
    launch = jobs.JobLaunch(
        name=pipeline.job_name,
        run_dir=run_dir,
        checkpoint=checkpoint,
        master=settings.SPARK_MASTER,
        spec=job_spec,
        redis_url=settings.REDIS_URL,
        driver_memory=settings.SPARK_DRIVER_MEMORY,
        trigger_interval=settings.SPARK_TRIGGER_INTERVAL,
        spark_conf=tuple(settings.SPARK_JOB_CONF),
        submit_args=tuple(settings.SPARK_SUBMIT_ARGS),
    )
    try:
        handle = jobs.start_job(launch)
    except (OSError, RuntimeError) as exc:
        services.pipeline_job_failed(pipeline=pipeline, reason=f"The job could not be started: {exc}")
        return
    redis_state.remember_secrets(pipeline.job_name, jobs.secret_values(job_spec))
    services.pipeline_run_create(
        pipeline=pipeline,
        version=version,
        attempt=attempt,
        host=handle.host,
        pid=handle.pid,
        process_started=handle.process_started,
        run_dir=handle.run_dir,
        log_path=handle.log_path,
        checkpoint=checkpoint,
        spark_master=settings.SPARK_MASTER,
    )
    log.info("pipeline %s: started version %s (attempt %s, pid %s)", pipeline.pk, version.number, attempt, handle.pid)


def discard(*, job_name: str, job: dict | None, remove_checkpoint: bool) -> None:
    """After a delete: stop the job that ran (SIGTERM, SIGKILL after the stop timeout), remove its spec file,
    and remove the checkpoint if asked. The ClickHouse rows stay."""
    if job is not None and job.get("host") in ("", jobs.this_host()):
        pid, started = job.get("pid"), job.get("process_started")
        jobs.request_stop(pid=pid, process_started=started)
        if not jobs.wait_gone(pid=pid, process_started=started, timeout=settings.PIPELINE_STOP_TIMEOUT_SECONDS):
            jobs.force_kill(pid=pid, process_started=started)
            jobs.wait_gone(pid=pid, process_started=started, timeout=10)
        if job.get("run_dir"):
            jobs.remove_spec(job["run_dir"])
    if remove_checkpoint:
        jobs.remove_checkpoint(checkpoint_location(job_name))
