"""How a failed job comes back (`worker.reconciler` acts, this says when and tells it): a restart waits while the
disk under the checkpoint root is still full, a job that no run records (its worker died while starting it) is
stopped before another starts, and a restarted job's steps are timed in the log (its end seen, its new job
started, running).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from clearflow_spec import failures
from webapp.pipelines import run_records
from webapp.pipelines.models import Pipeline, PipelineRun, RunOutcome
from worker import jobs, redis_state, standby

log = logging.getLogger(__name__)

# A pipeline whose job died of a full disk restarts once this much is free under the checkpoint root again.
RESTART_FREE_MB = 64.0


def checkpoint_disk() -> failures.DiskSpace:
    """The checkpoint root and the space free on its disk now (None for a remote root: s3a://, hdfs://)."""
    root = settings.CLEARFLOW_CHECKPOINT_ROOT
    if "://" in root:
        return failures.DiskSpace(root, None)
    path = Path(root)
    while not path.exists() and path != path.parent:
        path = path.parent
    return failures.DiskSpace(root, shutil.disk_usage(path).free / 2**20)


def waiting_for_disk_space(pipeline: Pipeline) -> bool:
    """The last run died of a full disk and the disk is still full: the restart waits (it is not an attempt)."""
    last = PipelineRun.objects.filter(pipeline=pipeline).order_by("-started_at", "-id").first()
    if last is None or last.cause != failures.DISK_FULL:
        return False
    disk = checkpoint_disk()
    if disk.free_mb is None or disk.free_mb >= RESTART_FREE_MB:
        return False
    run_records.pipeline_restart_wait(
        pipeline=pipeline,
        seconds=settings.PIPELINE_WATCH_INTERVAL_SECONDS,
        reason=(
            f"Disk full under {disk.path}: {disk.free_mb:.0f} MB free. It restarts once {RESTART_FREE_MB:.0f} MB "
            "are free there (checked at every watcher tick); free space, or move CLEARFLOW_CHECKPOINT_ROOT."
        ),
    )
    return True


def seconds_since_heartbeat(pipeline: Pipeline, run: PipelineRun) -> float:
    """How long ago the job last said it was alive (its heartbeat, else its start): how late its end was seen."""
    last = max(filter(None, [run.started_at, run.running_at, redis_state.heartbeat_at(pipeline.job_name)]))
    return (timezone.now() - last).total_seconds()


def log_restart_steps(pipeline: Pipeline, run: PipelineRun, *, standby: bool) -> None:
    """A restarted job runs: the time of each step since its predecessor's end was seen (ended, restart started,
    its job started, running), for the log and the chaos bench (bench/chaos.py)."""
    previous = (
        PipelineRun.objects.filter(pipeline=pipeline, ended_at__isnull=False, started_at__lt=run.started_at)
        .order_by("-started_at", "-id")
        .first()
    )
    if previous is None or previous.outcome != RunOutcome.FAILED or run.running_at is None:
        return
    ended = previous.ended_at
    log.info(
        "pipeline %s: running again %.1f s after run %s's end was seen (its job started after %.1f s, in %s; "
        "running %.1f s later)",
        pipeline.pk,
        (run.running_at - ended).total_seconds(),
        previous.pk,
        (run.started_at - ended).total_seconds(),
        "a standby job" if standby else "a cold start",
        (run.running_at - run.started_at).total_seconds(),
    )


def stop_unrecorded_jobs(job_name: str, *, run_root: Path) -> int:
    """Before a pipeline's job starts (no run of it is open): SIGKILL every job of this host still running it. A
    worker killed between starting a job and committing its run leaves one that nobody watches; a second one
    beside it would write the same checkpoint. Its last batch is replayed by the new job, and ClickHouse drops
    what it had written already (the insert tokens). How many were stopped."""
    found = [h for h in jobs.find_jobs(run_root) if standby.job_name_of(h.run_dir) == job_name]
    for handle in found:
        log.warning(
            "%s: a job of this pipeline that no run records is running (pid %s, %s; its worker died while starting "
            "it): stopping it before the new one starts",
            job_name,
            handle.pid,
            handle.run_dir,
        )
        jobs.kill_session(handle.pid)
    return len(found)
