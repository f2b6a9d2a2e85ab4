"""The job supervisor's lease in Redis (worker.leases) with plain processes, no Spark: it is there while the job
runs, a stop or kill asked through it reaches the job, the end is recorded in it, and a supervisor that cannot
renew it stops its own job."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import redis

from clearflow_spec.failures import classify
from clearflow_spec.protocol import ExitCode
from localstack.processes import free_port
from tests.spark_jobs.engine_helpers import wait_for
from worker import jobs, leases, redis_state
from worker.job_control import control_for

TERM = 3.0  # renewed every 0.5 s
SLEEPER = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: (print('got SIGTERM', flush=True), sys.exit(0)))\n"
    "print('pipeline pipeline-7 started (query q-1, application local-123, checkpoint /c)', flush=True)\n"
    "time.sleep(600)\n"
)


@pytest.fixture(autouse=True)
def workers_redis(settings, redis_url, monkeypatch):
    """The worker's Redis (where it reads leases) is the session's."""
    settings.REDIS_URL = redis_url
    monkeypatch.setattr(redis_state, "_client", None)


def start(run_dir: Path, redis_url: str, code: str = SLEEPER) -> jobs.JobHandle:
    run_dir.mkdir(parents=True)
    launcher = subprocess.run(
        [sys.executable, "-m", "worker.jobwrap", "--run-dir", str(run_dir), "--lease-seconds", str(TERM), "--",
         sys.executable, "-c", code],
        capture_output=True, text=True, timeout=30, cwd=Path(jobs.__file__).parents[1],
        env={**os.environ, "CLEARFLOW_REDIS_URL": redis_url},
    )  # fmt: skip
    assert launcher.returncode == 0, launcher.stderr
    pid = int(launcher.stdout)
    started = psutil.Process(pid).create_time()
    return jobs.JobHandle(pid, started, "another-host", str(run_dir), str(run_dir / "job.log"))


def test_a_job_is_watched_and_stopped_through_its_lease(tmp_path, redis_url):
    client = redis.Redis.from_url(redis_url)
    handle = start(tmp_path / "pipeline-7" / "run-1", redis_url)
    remote = control_for(host="another-host", pid=None, process_started=None, run_dir=handle.run_dir)
    assert not remote.here

    lease = leases.read(client, handle.run_dir)  # written before the pid was reported
    assert lease is not None and (lease.host, lease.pid) != ("", None) and lease.pid == handle.pid
    assert remote.state() == jobs.JobState(alive=True)
    assert wait_for(remote.started_application, timeout=10) == "local-123"  # found in the log
    time.sleep(TERM * 1.5)  # past a whole term: renewed
    assert remote.state().alive

    assert remote.request_stop()
    assert remote.wait_gone(timeout=15)
    assert remote.state() == jobs.JobState(alive=False, exit_code=0)
    assert wait_for(lambda: not psutil.pid_exists(handle.pid) or _zombie(handle.pid), timeout=10)
    assert "got SIGTERM" in remote.log_tail(secrets=[])  # the end of the log travels in the lease
    assert remote.lost_reason() is None
    assert client.ttl(leases.lease_key(handle.run_dir)) > 24 * 3600  # the end is kept for days
    assert not remote.request_stop()  # nothing left to stop


def test_a_kill_through_the_lease_and_a_lease_that_expired(tmp_path, redis_url):
    client = redis.Redis.from_url(redis_url)
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    handle = start(tmp_path / "pipeline-8" / "run-1", redis_url, stubborn)
    remote = control_for(host="another-host", pid=None, process_started=None, run_dir=handle.run_dir)
    remote.request_stop()
    assert not remote.wait_gone(timeout=2)  # ignores SIGTERM
    assert remote.force_kill()
    assert remote.wait_gone(timeout=15)
    assert remote.state() == jobs.JobState(alive=False, exit_code=-9)

    # A lease nobody renews (its host is gone): lost, and said so.
    client.delete(leases.lease_key(handle.run_dir))
    assert remote.state() == jobs.JobState(alive=False)
    assert "another-host stopped renewing its lease" in remote.lost_reason()


def test_a_supervisor_that_cannot_renew_its_lease_stops_its_job(tmp_path):
    nobody_listens = f"redis://127.0.0.1:{free_port()}/0"
    started = time.monotonic()
    handle = start(tmp_path / "pipeline-9" / "run-1", nobody_listens)
    here = control_for(host="", pid=handle.pid, process_started=handle.process_started, run_dir=handle.run_dir)
    assert here.wait_gone(timeout=30)
    assert time.monotonic() - started < TERM + 10  # stopped at half the term (SIGTERM), killed at 0.8 at the latest
    assert here.state() == jobs.JobState(alive=False, exit_code=ExitCode.LEASE_LOST)
    log = Path(handle.log_path).read_text()
    assert "the lease could not be renewed" in log and "got SIGTERM" in log
    assert "could not renew its lease" in classify(log, ExitCode.LEASE_LOST).words


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True
