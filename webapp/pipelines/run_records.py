"""The worker's writes of a pipeline's runs, and the restart policy (HackSoft services: keyword-only, typed).

`worker.reconciler` calls these with the pipeline's row locked: a started job's record (`PipelineRun`), its steps
and its end; the pipeline's status as the job goes (running, stopped, interrupted, failed); after a failure the
restart planned with backoff, or none once the failures reach the limit or repeat one lasting cause
(`pipeline_job_failed`); the re-sizing of a running job (`pipeline_resize`, from `worker.lag`). What a person asks
for (create, deploy, stop, resume, delete) is `webapp.pipelines.services`.
Status changes are compare-and-set (`Pipeline.transition(action)`, as `webapp.pipelines.lifecycle`'s table allows).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import takewhile
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from clearflow_spec import failures
from webapp.core import queue
from webapp.pipelines.lifecycle import Action
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineStatus, PipelineVersion, RunOutcome


def pipeline_run_create(*, pipeline: Pipeline, version: PipelineVersion, attempt: int, **where: Any) -> PipelineRun:
    """Record a started job (`where`: host, pid, process_started, run_dir, log_path, checkpoint, spark_master,
    driver_memory, start).
    The partial unique constraint makes a second active run of the pipeline fail (IntegrityError)."""
    run = PipelineRun(pipeline=pipeline, version=version, attempt=attempt, **where)
    run.full_clean(exclude=["pipeline", "version"], validate_constraints=False)
    run.save()
    if pipeline.reset_checkpoint:
        Pipeline.objects.filter(pk=pipeline.pk).update(reset_checkpoint=False)
    return run


def pipeline_run_running(*, pipeline: Pipeline, run: PipelineRun, spark_app_id: str) -> None:
    """The job's streaming query has started: the run is running, and so is a deploying pipeline."""
    now = timezone.now()
    PipelineRun.objects.filter(pk=run.pk).update(running_at=now, spark_app_id=spark_app_id[:100])
    run.running_at, run.spark_app_id = now, spark_app_id
    number = run.version.number if run.version else "?"
    restart = f" (restart {run.attempt - 1})" if run.attempt > 1 else ""
    pipeline.transition(
        Action.JOB_STARTED, message=f"Version {number} running{restart}, Spark application {spark_app_id}."
    )


def pipeline_run_mark(*, run: PipelineRun, **fields: Any) -> None:
    """Note a step of a run the worker took (stop_requested_at, killed_at, reason)."""
    allowed = {"stop_requested_at", "killed_at", "reason"}
    if not set(fields) <= allowed:
        raise ValueError(f"only {sorted(allowed)} can be marked")
    PipelineRun.objects.filter(pk=run.pk).update(**fields)
    for key, value in fields.items():
        setattr(run, key, value)


def pipeline_run_end(
    *, run: PipelineRun, outcome: str, exit_code: int | None, reason: str, cause: str = "", log_tail: str = ""
) -> None:
    """The run's job is gone: how it ended, why in words, and for a failure its cause's code and last log lines."""
    now = timezone.now()
    fields = {"outcome": outcome, "exit_code": exit_code, "reason": reason, "cause": cause, "log_tail": log_tail}
    PipelineRun.objects.filter(pk=run.pk, ended_at__isnull=True).update(ended_at=now, **fields)
    run.ended_at = now
    for key, value in fields.items():
        setattr(run, key, value)


def pipeline_job_stopped(*, pipeline: Pipeline, forced: bool) -> None:
    how = "forced after the stop timeout (the cut micro-batch is replayed on resume)" if forced else "gracefully"
    pipeline.transition(Action.JOB_STOPPED, message=f"Stopped {how}.")


def pipeline_job_interrupted(*, pipeline: Pipeline, reason: str) -> None:
    """The job was stopped with the platform around it (the local stack stopping), neither by a person nor by a
    failure: the pipeline stays deployed ("deploying"), so the worker starts it again from its checkpoint as soon
    as it runs again. Not a failure toward the restart limit, and the limit's count starts again, as after a
    resume."""
    pipeline.transition(
        Action.JOB_INTERRUPTED,
        message=reason,
        deploy_requested_at=timezone.now(),
        restart_at=None,
    )


def restart_delay(failures: int) -> float:
    """Exponential backoff: base, 2x base, 4x base ... capped."""
    base = settings.PIPELINE_RESTART_BACKOFF_SECONDS
    return min(settings.PIPELINE_RESTART_BACKOFF_MAX_SECONDS, base * 2 ** max(0, failures - 1))


def pipeline_job_failed(
    *, pipeline: Pipeline, reason: str, restartable: bool = True, cause: failures.Cause | None = None
) -> None:
    """The job died (or was lost, or stalled): "failed" with the reason, and an automatic restart planned: at once
    for the first failure of a job that had been running, else with backoff; unless the failures since the last
    deploy within the window reached the limit, or the last runs all died of the same lasting `cause`
    (`PIPELINE_SAME_CAUSE_LIMIT` in a row): then it stays failed and says so."""
    now = timezone.now()
    since = now - timedelta(seconds=settings.PIPELINE_RESTART_WINDOW_SECONDS)
    if pipeline.deploy_requested_at and pipeline.deploy_requested_at > since:
        since = pipeline.deploy_requested_at
    failures_since = PipelineRun.objects.filter(pipeline=pipeline, outcome=RunOutcome.FAILED, started_at__gte=since)
    count = failures_since.count()
    limit = settings.PIPELINE_RESTART_MAX_ATTEMPTS
    same = _same_cause_in_a_row(pipeline, cause, since=since) if cause is not None else 0
    if not restartable:
        message, restart_at = f"{reason} Not restarted: a restart cannot help.", None
    elif cause is not None and same >= settings.PIPELINE_SAME_CAUSE_LIMIT:
        message = (
            f"{reason} Stopped restarting: {cause.phrase} {same} times in a row; another restart cannot help until "
            "that is changed. Deploy or resume once it is."
        )
        restart_at = None
    elif count > limit:
        message, restart_at = f"{reason} Gave up after {count} failed attempts (limit: {limit} restarts).", None
    elif count == 1 and _last_failure_had_run(failures_since):
        # A job that ran and then died (killed, its host lost): its checkpoint holds, nothing says the next start
        # fails too, and every second waited is lag. From the second failure on, the backoff applies.
        message, restart_at = f"{reason} Restarting now (restart 1 of {limit}).", now
    else:
        delay = restart_delay(count)
        message = f"{reason} Restarting in {delay:.0f} s (restart {count} of {limit})."
        restart_at = now + timedelta(seconds=delay)
    pipeline.transition(Action.JOB_FAILED, message=message, restart_at=restart_at)


def _last_failure_had_run(failures_since: QuerySet[PipelineRun]) -> bool:
    last = failures_since.order_by("-started_at", "-id").first()
    return last is not None and last.running_at is not None


def _same_cause_in_a_row(pipeline: Pipeline, cause: failures.Cause, *, since: datetime) -> int:
    """How many of the pipeline's last ended runs (since `since`, newest first) failed of `cause`, in a row; 0 for
    a cause whose repeats do not count (a service that is down, a kill, an error not recognised)."""
    if not cause.repeats_count:
        return 0
    recent = (
        PipelineRun.objects.filter(pipeline=pipeline, started_at__gte=since, ended_at__isnull=False)
        .order_by("-started_at", "-id")
        .values_list("outcome", "cause")[: settings.PIPELINE_SAME_CAUSE_LIMIT]
    )
    return len(list(takewhile(lambda row: row == (RunOutcome.FAILED, cause.code), recent)))


def pipeline_restart_wait(*, pipeline: Pipeline, seconds: float, reason: str) -> bool:
    """A due restart waits `seconds` more for what it needs (space on the checkpoint's disk), without counting as
    an attempt; the reason is the pipeline's status message. Whether it was still failed."""
    restart_at = timezone.now() + timedelta(seconds=seconds)
    waited = Pipeline.objects.filter(pk=pipeline.pk, status=PipelineStatus.FAILED, restart_at__isnull=False).update(
        restart_at=restart_at, status_message=reason
    )
    if waited:
        pipeline.restart_at, pipeline.status_message = restart_at, reason
    return bool(waited)


def pipeline_restart(*, pipeline: Pipeline) -> bool:
    """A planned automatic restart is due: failed -> deploying (from the checkpoint). Whether it was made."""
    return pipeline.transition(Action.RESTART, message="Restarting from the checkpoint.", restart_at=None)


def pipeline_resize(*, pipeline: Pipeline, run: PipelineRun, events_per_second: float, reason: str) -> bool:
    """The worker sizes the running job again (`worker.lag`): the run is marked with the rate to size for, once
    (compare-and-set), and the pipeline goes running -> deploying, so the reconciler stops the job and starts it
    again from its checkpoint, sized for that rate (`worker.reconciler._start`). Whether it was made."""
    resize = {"events_per_second": round(float(events_per_second), 1), "reason": reason}
    with transaction.atomic():
        marked = PipelineRun.objects.filter(pk=run.pk, ended_at__isnull=True, resize={}).update(resize=resize)
        if not marked:
            return False
        if not pipeline.transition(Action.RESIZE, message=f"Re-sizing: {reason}."):
            transaction.set_rollback(True)
            return False
        run.resize = resize
        transaction.on_commit(lambda: queue.pipeline_reconcile(pipeline_id=pipeline.pk))
    return True
