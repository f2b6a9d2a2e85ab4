"""The reconciler: bring each pipeline's job in line with its status (start, mark running, watch, stop, fail, restart).

`reconcile(pipeline_id)` is the one place that acts, called by the deploy/stop tasks and, every few seconds,
by the watcher for every pipeline that may need something. It holds the pipeline's row lock while it acts
(`SELECT ... FOR UPDATE SKIP LOCKED`: a pipeline another worker is busy with is skipped, never started twice;
the partial unique index on active runs backs that up). It never waits while holding the lock: it returns how
long the caller may wait for a process to end before calling again. Any worker acts on any run: a job on this
host through its process, a job on another host through its lease (`worker.job_control`).

The local stack's last word, `worker.stack_stop.stop_stack_jobs()`, stops every job the stack started and records
them here as stopped with the stack, so they start again with it.

Processes are `worker.jobs`' business; every state change is a service of `webapp.pipelines.services` (the runs'
records and the restart policy: `webapp.pipelines.run_records`), and which statuses want a job, or have one to
watch, is read from the lifecycle (`webapp.pipelines.lifecycle`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from clearflow_spec import failures
from clearflow_spec.job_sizing import JobResources
from clearflow_spec.protocol import ExitCode
from clearflow_spec.sizing import LIGHT_TRIGGER
from clearflow_spec.spec import PipelineSpec, SpecError
from spark_jobs.s3_client import S3Error
from webapp.core import queue
from webapp.pipelines import run_records, services
from webapp.pipelines.lifecycle import JOB_ACTIVE, JOB_WANTED
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineStatus, RunOutcome
from worker import job_sizing, jobs, recovery, redis_state, standby
from worker.job_control import JobControl, control_for

log = logging.getLogger(__name__)
S = PipelineStatus
LOG_LINES_IN_REASON = 20


@dataclass(frozen=True)
class WaitFor:
    """A job the caller may wait for (up to `seconds`) before reconciling again."""

    job: JobControl
    seconds: float


def _control(run: PipelineRun) -> JobControl:
    return control_for(
        host=run.host, pid=run.pid, process_started=run.process_started, run_dir=run.run_dir, log_path=run.log_path
    )


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
        if run is not None:
            return _reconcile_run(pipeline, run)
        return _reconcile_idle(pipeline)


def reconcile_until_settled(pipeline_id: int, *, rounds: int = 4) -> None:
    """Reconcile, wait for the process it is stopping (outside the lock), and reconcile again."""
    for _ in range(rounds):
        wait = reconcile(pipeline_id)
        if wait is None:
            return
        wait.job.wait_gone(max(0.0, wait.seconds))


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
    try:
        keep_standby()
    except Exception:  # a deploy then starts cold: slower, not broken
        log.exception("could not start a standby job")
    return len(ids)


def _reconcile_idle(pipeline: Pipeline) -> WaitFor | None:
    status = pipeline.status
    if status == S.DEPLOY_REQUESTED:
        _start(pipeline)
    elif status == S.STOP_REQUESTED:
        run_records.pipeline_job_stopped(pipeline=pipeline, forced=False)
    elif status == S.RUNNING:
        run_records.pipeline_job_failed(pipeline=pipeline, reason="The job is gone (no record of its process).")
    elif (
        status == S.FAILED
        and pipeline.restart_at
        and pipeline.restart_at <= timezone.now()
        and not recovery.waiting_for_disk_space(pipeline)
        and run_records.pipeline_restart(pipeline=pipeline)
    ):
        _start(pipeline)
    return None


def _reconcile_run(pipeline: Pipeline, run: PipelineRun) -> WaitFor | None:
    job = _control(run)
    state = job.state()
    if not state.alive:
        _ended(pipeline, run, job, state.exit_code)
        return None
    if job.here:  # the log file is on the job's host; elsewhere the job's lease carries its last lines at the end
        redis_state.publish_log(pipeline.job_name, run)
    wanted = (
        pipeline.status == S.DEPLOY_REQUESTED
        and run.version_id == pipeline.deployed_version_id
        and not pipeline.reset_checkpoint
        and not run.resize  # re-sized (worker.lag): it stops, and starts again sized anew
    ) or pipeline.status == S.RUNNING
    if not wanted:  # stopping, a redeploy of another version, or a status that wants no job
        return _stop(run, job)
    now = timezone.now()
    if run.running_at is None:
        app_id = job.started_application()
        if app_id:
            run_records.pipeline_run_running(pipeline=pipeline, run=run, spark_app_id=app_id)
            recovery.log_restart_steps(pipeline, run, standby=STANDBY_START in run.start)
            transaction.on_commit(lambda: queue.audit_pipeline(pipeline_id=pipeline.pk))
        elif _older_than(run.started_at, settings.PIPELINE_START_TIMEOUT_SECONDS, now):
            _kill(run, job, f"The job did not start within {settings.PIPELINE_START_TIMEOUT_SECONDS:.0f} s.")
        return None
    if pipeline.status == S.DEPLOY_REQUESTED:  # the same version deployed again while it ran: nothing to restart
        run_records.pipeline_run_running(pipeline=pipeline, run=run, spark_app_id=run.spark_app_id)
        return None
    beat = redis_state.heartbeat_or_missing_since(pipeline.job_name)
    last = max(filter(None, [run.running_at, beat]))
    if _older_than(last, settings.PIPELINE_HEARTBEAT_TIMEOUT_SECONDS, now):
        _kill(run, job, f"The job sent no heartbeat for {settings.PIPELINE_HEARTBEAT_TIMEOUT_SECONDS:.0f} s (stalled).")
    return None


def _older_than(moment: datetime, seconds: float, now: datetime) -> bool:
    return now - moment > timedelta(seconds=seconds)


def _stop(run: PipelineRun, job: JobControl) -> WaitFor:
    """SIGTERM once (the job finishes its micro-batch); SIGKILL to the group once the stop timeout passed."""
    now = timezone.now()
    timeout = settings.PIPELINE_STOP_TIMEOUT_SECONDS
    if run.stop_requested_at is None:
        job.request_stop()
        run_records.pipeline_run_mark(run=run, stop_requested_at=now)
        return WaitFor(job, timeout)
    remaining = timeout - (now - run.stop_requested_at).total_seconds()
    if remaining > 0:
        return WaitFor(job, remaining)
    if run.killed_at is None:
        job.force_kill()
        run_records.pipeline_run_mark(run=run, killed_at=now)
    return WaitFor(job, 10.0)


def _kill(run: PipelineRun, job: JobControl, reason: str) -> None:
    log.warning("pipeline %s run %s: %s Killing it.", run.pipeline_id, run.pk, reason)
    job.force_kill()
    run_records.pipeline_run_mark(run=run, killed_at=timezone.now(), reason=reason)


def _ended(pipeline: Pipeline, run: PipelineRun, job: JobControl, exit_code: int | None) -> None:
    """The run's job is gone: record how it ended and move the pipeline on."""
    if job.here:
        jobs.remove_spec(run.run_dir)
    tail = job.log_tail(redis_state.secrets_of(pipeline))
    redis_state.publish_log(pipeline.job_name, run, text=tail)
    if job.here and jobs.stopped_with_stack(run.run_dir):
        _ended_with_stack(pipeline, run, exit_code)
        return
    stopping = run.stop_requested_at is not None
    if stopping:
        if pipeline.status == S.STOP_REQUESTED:
            outcome, reason = RunOutcome.STOPPED, run.reason or "stopped"
        elif run.resize:
            outcome, reason = RunOutcome.RESIZED, f"Re-sized: {run.resize.get('reason', '')}."
        else:
            outcome, reason = RunOutcome.REPLACED, run.reason or "stopped"
        run_records.pipeline_run_end(run=run, outcome=outcome, exit_code=exit_code, reason=reason)
        if pipeline.status == S.STOP_REQUESTED:
            run_records.pipeline_job_stopped(pipeline=pipeline, forced=run.killed_at is not None)
        elif pipeline.status == S.DEPLOY_REQUESTED:
            _start(pipeline)  # the redeploy: the old version is down, start the new one
        return
    cause = _failure_cause(pipeline, run, job, tail, exit_code)
    last_lines = "\n".join(tail.splitlines()[-LOG_LINES_IN_REASON:])
    run_records.pipeline_run_end(
        run=run,
        outcome=RunOutcome.FAILED,
        exit_code=exit_code,
        reason=cause.words,
        cause=cause.code,
        log_tail=last_lines,
    )
    if pipeline.status in JOB_WANTED:
        run_records.pipeline_job_failed(
            pipeline=pipeline,
            reason=f"Failed: {cause.words}",
            restartable=exit_code != ExitCode.INVALID_SPEC and cause.restart_helps,
            cause=cause,
        )
        log.info(
            "pipeline %s: run %s's job ended (exit code %s, %s), noticed %.1f s after its last heartbeat; %s",
            pipeline.pk,
            run.pk,
            exit_code,
            cause.code,
            recovery.seconds_since_heartbeat(pipeline, run),
            f"restart at {pipeline.restart_at:%H:%M:%S}" if pipeline.restart_at else "not restarted",
        )
        _reconcile_idle(pipeline)  # a restart due now starts in this same pass, not at the next tick
    elif pipeline.status == S.STOP_REQUESTED:
        run_records.pipeline_job_stopped(pipeline=pipeline, forced=False)


def _failure_cause(
    pipeline: Pipeline, run: PipelineRun, job: JobControl, tail: str, exit_code: int | None
) -> failures.Cause:
    """Why a run failed: what the worker saw when it killed the job (a stall, a start that never came), a host
    that was lost, else what the job's log and exit code say (`clearflow_spec.failures`)."""
    if run.reason:  # the worker killed it and said why
        return failures.Cause(failures.STALLED, run.reason, "It restarts on its own.")
    lost = job.lost_reason()
    if lost:
        return failures.Cause(failures.LOST, lost, "It restarts on another worker.")
    # Here, more of the log than the tail kept with the run: Spark's stack traces can push the error that
    # started it all (an OutOfMemoryError) far above the last lines.
    text = jobs.log_tail(run.log_path, lines=1000, secrets=redis_state.secrets_of(pipeline)) if job.here else tail
    return failures.classify(text or tail, exit_code, memory=run.driver_memory or None, disk=recovery.checkpoint_disk())


STACK_STOP_REASON = "Stopped with the local stack; it starts again, from its checkpoint, at the stack's next start."


def _ended_with_stack(pipeline: Pipeline, run: PipelineRun, exit_code: int | None) -> None:
    """The stack stopped this job (`worker.stack_stop.stop_stack_jobs`): not a failure, nothing to restart now. A
    stop that was under way is done; otherwise the pipeline stays deployed and the next start of the stack runs it
    again."""
    forced = run.killed_at is not None or exit_code is None
    if pipeline.status == S.STOP_REQUESTED:
        run_records.pipeline_run_end(run=run, outcome=RunOutcome.STOPPED, exit_code=exit_code, reason=STACK_STOP_REASON)
        run_records.pipeline_job_stopped(pipeline=pipeline, forced=forced)
        return
    how = " (forced after the stop timeout: its last micro-batch is replayed)" if forced else ""
    run_records.pipeline_run_end(
        run=run, outcome=RunOutcome.STACK_STOPPED, exit_code=exit_code, reason=STACK_STOP_REASON + how
    )
    run_records.pipeline_job_interrupted(pipeline=pipeline, reason=STACK_STOP_REASON)


def _start(pipeline: Pipeline) -> None:
    log.info("pipeline %s: starting its job at %.3f", pipeline.pk, time.time())  # deploy -> pickup, for the bench
    version = pipeline.deployed_version
    if version is None:
        run_records.pipeline_job_failed(pipeline=pipeline, reason="No version to run.", restartable=False)
        return
    since = pipeline.deploy_requested_at or pipeline.created_at
    attempt = PipelineRun.objects.filter(pipeline=pipeline, started_at__gte=since).count() + 1
    try:
        job_spec = services.pipeline_job_spec(pipeline=pipeline, version=version)
    except SpecError as exc:
        run_records.pipeline_job_failed(pipeline=pipeline, reason=f"The spec is not valid: {exc}", restartable=False)
        return
    recovery.stop_unrecorded_jobs(pipeline.job_name, run_root=Path(settings.CLEARFLOW_RUN_ROOT))
    checkpoint = checkpoint_location(pipeline.job_name)
    if pipeline.reset_checkpoint:
        try:
            jobs.remove_checkpoint(checkpoint)
        except S3Error as exc:
            reason = f"The checkpoint at {checkpoint} could not be reset: {exc}."
            run_records.pipeline_job_failed(pipeline=pipeline, reason=reason, restartable=True)
            return
    run_dir = Path(settings.CLEARFLOW_RUN_ROOT) / pipeline.job_name / f"{time.strftime('%Y%m%dT%H%M%S')}-{attempt}"
    # Sized from the expected dedup state (the topic's recent rate x the window, or the state the checkpoint
    # holds); the settings' --conf come after, so CLEARFLOW_SPARK_CONF still overrides the RocksDB bound.
    resized = _resized_from(pipeline)
    resources = job_sizing.job_resources(
        spec=job_spec,
        kafka_connection=pipeline.kafka_connection,
        checkpoint=checkpoint,
        events_per_second=resized.resize.get("events_per_second") if resized else None,
    )
    launch = _launch(
        name=pipeline.job_name,
        run_dir=run_dir,
        checkpoint=checkpoint,
        spec=job_spec,
        driver_memory=resources.driver_memory,
        sized_conf=resources.spark_conf,
        trigger_interval=resources.trigger_interval,
        idle_after_first_batch=resources.light and settings.PIPELINE_LIGHT_JOBS_IDLE,
    )
    try:
        handle, start_note = _start_job(launch)
    except (OSError, RuntimeError) as exc:
        run_records.pipeline_job_failed(pipeline=pipeline, reason=f"The job could not be started: {exc}")
        return
    redis_state.remember_secrets(pipeline.job_name, jobs.secret_values(job_spec))
    run_records.pipeline_run_create(
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
        driver_memory=resources.driver_memory,
        start=_resize_note(resized, resources) + start_note,
        sizing=resources.sizing_record(),
    )
    log.info(
        "pipeline %s: started version %s (attempt %s, pid %s): %s",
        pipeline.pk,
        version.number,
        attempt,
        handle.pid,
        start_note,
    )


def _resized_from(pipeline: Pipeline) -> PipelineRun | None:
    """The pipeline's last run, when it ended to be re-sized (its `resize` says for what rate)."""
    last = PipelineRun.objects.filter(pipeline=pipeline).order_by("-started_at", "-id").first()
    return last if last is not None and last.outcome == RunOutcome.RESIZED and last.resize else None


def _resize_note(resized: PipelineRun | None, resources: JobResources) -> str:
    """How a re-sized run was sized, for its record: 'Re-sized (events arrive at 19.8k/s, sized for 0/s): restarted
    with a 1g heap, 512 MB of state memory, trigger 500 milliseconds. '"""
    if resized is None:
        return ""
    return f"Re-sized ({resized.resize.get('reason', '')}): restarted with {resources.words()}. "


def _launch(
    *,
    name: str,
    run_dir: Path,
    checkpoint: str,
    spec: PipelineSpec | None,
    driver_memory: str,
    sized_conf: tuple[str, ...] = (),
    trigger_interval: str = LIGHT_TRIGGER,
    idle_after_first_batch: bool = False,
) -> jobs.JobLaunch:
    """A job's launch from the settings; a standby job's when `spec` is None (the base heap, no sized settings)."""
    return jobs.JobLaunch(
        name=name,
        run_dir=run_dir,
        checkpoint=checkpoint,
        master=settings.SPARK_MASTER,
        spec=spec,
        redis_url=settings.REDIS_URL,
        driver_memory=driver_memory,
        trigger_interval=trigger_interval,
        spark_conf=(
            *sized_conf,
            *(["spark.ui.enabled=true"] if settings.SPARK_UI_ENABLED else []),
            *settings.SPARK_JOB_CONF,
        ),
        submit_args=tuple(settings.SPARK_SUBMIT_ARGS),
        lease_seconds=settings.PIPELINE_LEASE_SECONDS,
        niceness=settings.PIPELINE_JOB_NICENESS,
        idle_after_first_batch=idle_after_first_batch,
    )


STANDBY_START = "In a standby job: its JVM and Spark session were already up."


def _start_job(launch: jobs.JobLaunch) -> tuple[jobs.JobHandle, str]:
    """Hand the run to this host's standby job when one fits (`worker.standby`), else start it cold; the handle
    and how it started, in words, for the run's record. A standby taken is replaced at once, below this run's
    priority, so that the next deploy finds one too."""
    if settings.PIPELINE_STANDBY_JOBS <= 0 or jobs.is_cluster(launch.master):
        return jobs.start_job(launch), "Cold start (no standby jobs: CLEARFLOW_STANDBY=0 or a cluster master)."
    taken = standby.take(
        launch, run_root=Path(settings.CLEARFLOW_RUN_ROOT), wait=settings.PIPELINE_STANDBY_WAIT_SECONDS
    )
    if isinstance(taken, standby.Taken):
        try:
            keep_standby(niceness=settings.PIPELINE_JOB_NICENESS)
        except Exception:  # the watcher's next tick tries again
            log.exception("could not start a standby job")
        return taken.handle, STANDBY_START
    log.info("%s: cold start: %s", launch.name, taken)
    return jobs.start_job(launch), f"Cold start: {taken}."


# A job of this host that started at most this long ago and has no first micro-batch yet is still starting.
STARTING_JOB_SECONDS = 120.0


def keep_standby(*, niceness: int | None = None) -> list[standby.Standby]:
    """Keep this host's pool of standby jobs full (the watcher every tick, a deploy that took one, and the stack at
    its start): one starts when some are missing and none is starting; the ones started. A JVM's start takes a
    core for seconds, so while a deploy is under way or a job of this host has not finished its first micro-batch
    it starts at the jobs' lower priority (CLEARFLOW_JOB_NICENESS), taking what that first batch leaves; else at
    the worker's. `niceness` sets it without asking the database."""
    count = settings.PIPELINE_STANDBY_JOBS
    if count <= 0 or jobs.is_cluster(settings.SPARK_MASTER):
        return []
    if niceness is None:
        niceness = settings.PIPELINE_JOB_NICENESS if _a_job_is_starting() else 0
    template = _launch(
        name="standby", run_dir=Path(), checkpoint="", spec=None, driver_memory=job_sizing.standby_driver_memory()
    )
    return standby.ensure(template, run_root=Path(settings.CLEARFLOW_RUN_ROOT), count=count, niceness=niceness)


def _a_job_is_starting() -> bool:
    """A deploy is under way, or a job of this host started lately has not finished its first micro-batch."""
    if Pipeline.objects.filter(status=S.DEPLOY_REQUESTED).exists():
        return True
    recent = timezone.now() - timedelta(seconds=STARTING_JOB_SECONDS)
    starting = (
        PipelineRun.objects.filter(ended_at__isnull=True, host__in=["", jobs.this_host()])
        .filter(Q(running_at__isnull=True) | Q(running_at__gt=recent))
        .select_related("pipeline")
    )
    for run in starting:
        first_batch = redis_state.last_batch_at(run.pipeline.job_name) if run.running_at else None
        if first_batch is None or first_batch < run.running_at - timedelta(seconds=5):
            return True
    return False


def discard(*, job_name: str, job: dict | None, remove_checkpoint: bool) -> None:
    """After a delete: stop the job that ran (SIGTERM, SIGKILL after the stop timeout), remove its spec file,
    and remove the checkpoint if asked. The ClickHouse rows stay."""
    if job is not None:
        control = control_for(
            host=job.get("host") or "",
            pid=job.get("pid"),
            process_started=job.get("process_started"),
            run_dir=job.get("run_dir") or "",
        )
        control.request_stop()
        if not control.wait_gone(settings.PIPELINE_STOP_TIMEOUT_SECONDS):
            control.force_kill()
            control.wait_gone(10)
        if control.here and job.get("run_dir"):
            jobs.remove_spec(job["run_dir"])
    if remove_checkpoint:
        jobs.remove_checkpoint(checkpoint_location(job_name))
