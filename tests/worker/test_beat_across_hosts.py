"""Two worker hosts (their own host ids and run roots, one PostgreSQL and Redis), each running a worker with beat:
one beat sends the periodic tasks at a time, and when its host's processes are killed, the other host's beat takes
over within the beat lease; and the other host takes over its pipelines."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from tests.spark_jobs.engine_helpers import wait_for
from tests.worker.conftest import CeleryWorker, _kill_jobs
from tests.worker.helpers import JOB_TIMEOUT, URL, api_spec, create_pipeline, events, produce, table_counts, wait_status
from webapp.pipelines.models import PipelineRun
from webapp.pipelines.runtime import watcher_tick

pytestmark = pytest.mark.django_db(transaction=True)
LEASE_SECONDS = 6
JOB_LEASE_SECONDS = 15


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


@pytest.mark.spark
@pytest.mark.timeout(900)  # two job starts on the shared cores
def test_a_dead_hosts_pipeline_is_taken_over_by_the_other_host_from_its_checkpoint_with_exact_rows(
    api, client, owner, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, worker_env, celery_app, tmp_path
):
    """Two real worker hosts, one PostgreSQL, Redis and checkpoint root: the pipeline runs on host-a; host-a's whole
    process tree dies (its worker, its beat, the job's driver and supervisor); host-b records the loss when the
    job's lease runs out, runs the pipeline from its checkpoint, and the page says where it runs."""
    from worker import jobs

    table = f"takeover_{uuid.uuid4().hex[:8]}"
    hosts = {}
    for name in ("host-a", "host-b"):
        (tmp_path / name).mkdir()
        env = {**worker_env, "CLEARFLOW_HOST_ID": name, "CLEARFLOW_JOB_LEASE": str(JOB_LEASE_SECONDS)}
        env["CLEARFLOW_RUN_ROOT"] = str(tmp_path / name / "runs")
        hosts[name] = CeleryWorker(env, tmp_path / name)
    try:
        produce(kafka_bootstrap, topic, events("a", 300, 30))
        hosts["host-a"].start()  # alone, so the deploy runs there
        pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table))
        api.post(f"{URL}{pk}/deploy/")
        wait_status(api, pk, "running", worker=hosts["host-a"])
        wait_for(lambda: table_counts(ch, table) == (300, 300), timeout=JOB_TIMEOUT)
        first = PipelineRun.objects.get(pipeline_id=pk, ended_at__isnull=True)
        assert first.host == "host-a"
        hosts["host-b"].start()

        # host-a dies with everything it started; events keep coming meanwhile.
        os.killpg(hosts["host-a"].process.pid, signal.SIGKILL)
        for handle in jobs.find_jobs(Path(hosts["host-a"].env["CLEARFLOW_RUN_ROOT"])):
            jobs.kill_session(handle.pid)
        killed_at = time.time()
        produce(kafka_bootstrap, topic, events("b", 200, 20))

        lost = wait_for(lambda: PipelineRun.objects.filter(pk=first.pk, ended_at__isnull=False).first(), timeout=90)
        assert lost.outcome == "failed" and "host-a stopped renewing its lease" in lost.reason, lost.reason
        second = wait_for(
            lambda: PipelineRun.objects.filter(pipeline_id=pk, ended_at__isnull=True, host="host-b").first(),
            timeout=60,
        )
        assert second.started_at.timestamp() - killed_at < 60 + JOB_LEASE_SECONDS  # within a minute of the lease
        wait_status(api, pk, "running", worker=hosts["host-b"])
        wait_for(lambda: table_counts(ch, table)[1] == 500, timeout=JOB_TIMEOUT)
        assert table_counts(ch, table) == (500, 500)  # from the checkpoint: nothing lost, nothing doubled

        client.force_login(owner)
        page = client.get(f"/pipelines/{pk}/run-state/").content.decode()  # the page's "Runs and log"
        assert "host-b" in page and "host-a stopped renewing its lease" in page
    finally:
        for worker in hosts.values():
            worker.stop()
        for worker in hosts.values():
            _kill_jobs(Path(worker.env["CLEARFLOW_RUN_ROOT"]))
