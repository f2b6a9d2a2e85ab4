"""Two worker hosts (their own host ids and run roots, one PostgreSQL and Redis), each running a worker with beat:
one beat sends the periodic tasks at a time, and when its host's processes are killed, the other host's beat takes
over within the beat lease."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.spark_jobs.engine_helpers import wait_for
from tests.worker.conftest import CeleryWorker
from webapp.pipelines.runtime import watcher_tick

pytestmark = pytest.mark.django_db(transaction=True)
LEASE_SECONDS = 6


def sent_periodic_tasks(worker: CeleryWorker, since: int) -> int:
    """How many periodic tasks this worker's beat has sent, of its log lines after `since`."""
    lines = worker.log_path.read_text(errors="replace").splitlines()[since:]
    return sum("Scheduler: Sending due task" in line for line in lines)


def test_one_beat_sends_at_a_time_and_another_hosts_beat_takes_over_when_its_host_dies(worker_env, tmp_path):
    from worker.beat import beat_holder

    hosts = {}
    for name in ("host-a", "host-b"):
        (tmp_path / name).mkdir()
        env = {**worker_env, "CLEARFLOW_HOST_ID": name, "CLEARFLOW_BEAT_LEASE": str(LEASE_SECONDS)}
        env["CLEARFLOW_RUN_ROOT"] = str(tmp_path / name / "runs")
        hosts[name] = CeleryWorker(env, tmp_path / name)
    try:
        hosts["host-a"].start()
        wait_for(lambda: (beat_holder() or "").startswith("host-a "), timeout=30)
        hosts["host-b"].start()
        time.sleep(LEASE_SECONDS)  # host-b's beat has asked for the lease at least twice meanwhile
        assert (beat_holder() or "").startswith("host-a ")
        assert sent_periodic_tasks(hosts["host-b"], 0) == 0, hosts["host-b"].log_tail()
        assert sent_periodic_tasks(hosts["host-a"], 0) > 0

        # host-a dies: its whole process tree (worker, its embedded beat, anything it started), no goodbye.
        os.killpg(hosts["host-a"].process.pid, signal.SIGKILL)
        hosts["host-a"].process.wait(timeout=10)
        killed_at = time.time()
        wait_for(lambda: (beat_holder() or "").startswith("host-b "), timeout=LEASE_SECONDS + 20)
        assert time.time() - killed_at < LEASE_SECONDS + 20
        # host-b's beat sends now, and the watcher ticks again (its tasks run on host-b's worker).
        wait_for(lambda: sent_periodic_tasks(hosts["host-b"], 0) > 0, timeout=20)
        wait_for(lambda: (watcher_tick() or 0) > killed_at + 1, timeout=30)
    finally:
        for worker in hosts.values():
            worker.stop()
    assert beat_holder() is None  # a beat that stops gives the lease back at once
