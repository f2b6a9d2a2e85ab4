"""One pipeline under a steady load (a few thousand events a second) through the control plane's own faults, one
after another: its job SIGKILLed, Redis restarted (leases, heartbeats, metrics and the Celery broker all lost), the
Celery worker and beat SIGKILLed while a deploy is between "deploying" and the job's first heartbeat, and the disk
under the checkpoint root full. After each, the pipeline runs again by itself with exactly one job; at the end
ClickHouse holds each unique event exactly once and no job is left that nobody watches.

One story, one pipeline, one job start per fault: the CI budget pays for one Spark test here, not one per fault.
The worker's Redis is the test's own (it is restarted); the checkpoint root is a small tmpfs mounted for the test
(as root; else the disk phase is left out). PostgreSQL restarted is tests/webapp/core/test_database_down.py
(a cluster of its own, without a job).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.utils.dateparse import parse_datetime

from localstack import processes, service_defs
from tests.conftest import _drop_connections
from tests.worker.helpers import (
    JOB_TIMEOUT,
    URL,
    api_spec,
    create_pipeline,
    event,
    produce,
    status_of,
    table_counts,
    wait_for,
    wait_status,
)
from webapp.health.checks import check_celery
from worker import jobs, redis_state, standby

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]

RATE = 2000  # events a second, a tenth of them repeats
TMPFS_MB = 160


class Load(threading.Thread):
    """RATE events a second, in one-second batches, until stopped; `unique` counts the distinct events sent."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.unique = 0
        self.done = threading.Event()

    def run(self) -> None:
        second = 0
        while not self.done.is_set():
            started = time.monotonic()
            fresh = RATE * 9 // 10
            keys = [f"s{second}-{i}" for i in range(fresh)]
            records = [(i % 2, event(k, n=i)) for i, k in enumerate(keys)]
            records += [((i + 1) % 2, event(keys[i * 7 % fresh], n=-i)) for i in range(RATE - fresh)]
            produce(self.bootstrap, self.topic, records)
            self.unique += fresh
            second += 1
            self.done.wait(max(0.0, 1.0 - (time.monotonic() - started)))


def active_runs(api, pk: int) -> list[dict]:
    return [run for run in api.get(f"{URL}{pk}/runs/").json() if run["ended_at"] is None]


def pipeline_jobs(run_root: Path) -> list[jobs.JobHandle]:
    """The live jobs under the run root that run a pipeline (not a standby waiting for one)."""
    return [h for h in jobs.find_jobs(run_root) if not standby.is_waiting(h.run_dir)]


def batch_after(job_name: str, moment: float) -> bool:
    last = redis_state.last_batch_at(job_name)
    return last is not None and last.timestamp() > moment


def one_watched_job(api, pk: int, run_root: Path) -> dict:
    """Exactly one job runs, and it is the pipeline's one active run's."""
    [run] = active_runs(api, pk)
    assert [h.pid for h in pipeline_jobs(run_root)] == [run["pid"]], (run, pipeline_jobs(run_root))
    return run


def fill(path: Path) -> None:
    """Write to `path` until the disk has no room left (unbuffered: nothing is left to write at the close)."""
    with open(path, "wb", buffering=0) as out:
        for size in (2**20, 4096):  # megabytes, then the last partial one
            with contextlib.suppress(OSError):  # ENOSPC: full
                while True:
                    out.write(b"\0" * size)


@contextlib.contextmanager
def small_disk(path: Path):
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_MB}m", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.timeout(1800)  # four job starts on the shared cores
def test_the_control_planes_faults_under_load_lose_nothing_double_nothing_and_leave_one_watched_job(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker, worker_env, celery_app, settings, tmp_path
):
    if os.geteuid() != 0:
        pytest.skip("mounts a small tmpfs for the checkpoint root: run as root")
    redis_port = processes.free_port()
    redis_group = processes.ProcessGroup(tmp_path / "redis-logs")

    def start_redis() -> None:
        redis_group.start(service_defs.redis(port=redis_port, data_dir=tmp_path / "redis"))

    start_redis()
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    checkpoints = tmp_path / "checkpoints"
    run_root = Path(worker_env["CLEARFLOW_RUN_ROOT"])
    worker_env.update(
        REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url, CELERY_RESULT_BACKEND=redis_url,
        CLEARFLOW_CHECKPOINT_ROOT=str(checkpoints), CLEARFLOW_JOB_LEASE="30",
        CLEARFLOW_RESIZE_SETTLE="86400",  # sized from the load's rate at the deploy; a re-size is not this story's
    )  # fmt: skip
    settings.REDIS_URL = redis_url
    settings.CLEARFLOW_CHECKPOINT_ROOT = str(checkpoints)
    celery_app.conf.broker_url = celery_app.conf.result_backend = redis_url
    _drop_connections(celery_app)
    redis_state._client = None
    load = Load(kafka_bootstrap, topic)
    table = f"faults_{uuid.uuid4().hex[:8]}"
    with small_disk(checkpoints):
        try:
            celery_worker.start()
            spec = api_spec(topic, table)
            spec["source"]["max_records_per_batch"] = 5_000  # a first batch a loaded machine finishes soon
            pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=spec)
            load.start()
            time.sleep(10)  # the job is sized from the topic's recent rate
            api.post(f"{URL}{pk}/deploy/")
            wait_status(api, pk, "running", worker=celery_worker)
            wait_for(lambda: table_counts(ch, table)[0] > 0, timeout=JOB_TIMEOUT)

            # 1. The job SIGKILLed: started again in the pass that saw it gone (cold here: a standby's JVM start
            # would cost this test another minute; tests/worker/test_standby.py shows a start taking one).
            killed = one_watched_job(api, pk, run_root)
            started = time.monotonic()
            jobs.kill_session(killed["pid"])
            again = wait_for(
                lambda: next((r for r in active_runs(api, pk) if r["id"] != killed["id"] and r["running_at"]), None),
                timeout=JOB_TIMEOUT,
                interval=0.2,
            )
            recovered = time.monotonic() - started
            print(f"SIGKILLed job running again after {recovered:.1f} s ({again['start']})")
            [ended] = [r for r in api.get(f"{URL}{pk}/runs/").json() if r["id"] == killed["id"]]
            restarted_after = (parse_datetime(again["started_at"]) - parse_datetime(ended["ended_at"])).total_seconds()
            assert restarted_after < 5, restarted_after  # in the pass that saw it gone: no backoff, no next tick
            assert "running again" in celery_worker.log_path.read_text()  # each step timed in the log
            one_watched_job(api, pk, run_root)

            # 2. Redis restarted (no persistence: leases, heartbeats, metrics and queued tasks are gone).
            redis_group.stop_all()
            time.sleep(3)
            start_redis()
            restarted_at = time.time()
            wait_for(lambda: batch_after(f"pipeline-{pk}", restarted_at), timeout=120)  # metrics resume
            assert status_of(api, pk)["status"] == "running"
            assert one_watched_job(api, pk, run_root)["id"] == again["id"]  # the same job, its lease taken again

            # 3. The worker and beat SIGKILLed while a deploy is between "deploying" and the first heartbeat.
            api.post(f"{URL}{pk}/stop/")
            wait_status(api, pk, "stopped", worker=celery_worker)
            api.post(f"{URL}{pk}/deploy/")
            deploying = lambda: [r for r in active_runs(api, pk) if not r["running_at"]]  # noqa: E731
            wait_for(deploying, timeout=JOB_TIMEOUT, interval=0.1)
            os.killpg(celery_worker.process.pid, signal.SIGKILL)
            celery_worker.process.wait(10)
            settings.PIPELINE_BEAT_STALE_SECONDS = 3
            time.sleep(4)  # beat is gone with the worker: its last tick ages
            with pytest.raises(RuntimeError, match="no Celery worker answered"):
                check_celery()  # the health check says the watcher does not run
            celery_worker.start()
            wait_status(api, pk, "running", worker=celery_worker)
            one_watched_job(api, pk, run_root)

            # 4. The disk under the checkpoint root full: failed in words, waits for room, restarts, loses nothing.
            filler = checkpoints / "filler"
            fill(filler)
            failed = wait_status(api, pk, "failed", worker=celery_worker)
            assert f"Disk full under {checkpoints}: " in failed["status_message"], failed
            assert "MB free" in failed["status_message"]
            time.sleep(5)  # the watcher ticks meanwhile: the restart waits for room, not counted as an attempt
            assert status_of(api, pk)["status"] == "failed"
            filler.unlink()
            wait_status(api, pk, "running", worker=celery_worker)
        finally:
            load.done.set()
            load.join(30)
        wait_for(lambda: table_counts(ch, table) == (load.unique, load.unique), timeout=JOB_TIMEOUT)
        one_watched_job(api, pk, run_root)
        celery_worker.stop()
        for handle in jobs.find_jobs(run_root):
            jobs.kill_session(handle.pid)
    redis_group.stop_all()
