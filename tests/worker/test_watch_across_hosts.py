"""A job started on one host is watched by any worker of the stack, through the lease its supervisor holds in
Redis (worker.leases): this worker marks it running, stops it, and, when its host is lost (its lease expired),
records the failure and starts the pipeline again here. Also: the duplicate audit runs as soon as a pipeline's
query has started, not at the next periodic round.

"Another host" is a run recorded with another host name: its pid means nothing here, so the worker may only
reach it through its lease (the job really runs on this machine, so the test can kill it as a lost host would).
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import psutil
import pytest

from tests.worker.helpers import (
    JOB_TIMEOUT,
    URL,
    api_spec,
    create_pipeline,
    events,
    produce,
    table_counts,
    wait_for,
    wait_status,
)
from webapp.audits import selectors as audit_selectors
from webapp.pipelines.models import PipelineRun, PipelineStatus, PipelineTransition
from webapp.pipelines.runtime import watcher_tick
from worker import leases

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]
LEASE_SECONDS = 15


def elsewhere(run_id: int) -> None:
    """Record the run as started by a worker on another host."""
    assert PipelineRun.objects.filter(pk=run_id).update(host="another-host") == 1


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def ticks_after(moment: float, count: int) -> bool:
    """The watcher has run `count` ticks (of 1 s) since `moment`."""
    tick = watcher_tick()
    return tick is not None and tick > moment + count


def test_a_job_on_another_host_is_watched_stopped_and_taken_over_when_its_host_is_lost(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker, worker_env, settings
):
    worker_env["CLEARFLOW_JOB_LEASE"] = str(LEASE_SECONDS)
    worker_env["CLEARFLOW_AUDIT_INTERVAL"] = "3600"  # the periodic audit round would come in an hour only
    table = f"hosts_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, events("h", 300, 30))
    celery_worker.start()
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table))
    api.post(f"{URL}{pk}/deploy/")
    wait_status(api, pk, "running", worker=celery_worker)
    wait_for(lambda: table_counts(ch, table) == (300, 300), timeout=JOB_TIMEOUT)
    running_at = PipelineTransition.objects.filter(pipeline_id=pk, to_status=PipelineStatus.RUNNING).get().at

    # The duplicate audit ran when the query started, not at the next round (an hour away).
    audit = wait_for(lambda: audit_selectors.latest_result_for_pipeline(pipeline_id=pk), timeout=120)
    assert audit.checked_at >= running_at and audit.error == "" and audit.duplicate_keys == 0
    assert audit.audited_table.table == table and audit.audited_table.key_columns == ["event_id"]

    # Watched from "here" through its lease: the worker sees it alive, tick after tick, past a whole lease term.
    run = PipelineRun.objects.get(pipeline_id=pk, ended_at__isnull=True)
    elsewhere(run.pk)
    lease = leases.read(_redis(settings), run.run_dir)
    assert lease is not None and lease.pid == run.pid and lease.exit_code is None
    since = time.time()
    wait_for(lambda: ticks_after(since, LEASE_SECONDS + 3), timeout=120, interval=0.5)
    assert api.get(f"{URL}{pk}/status/").json()["status"] == "running"
    assert PipelineRun.objects.get(pk=run.pk).ended_at is None

    # A stop asked from here reaches the job through its lease; it stops after its micro-batch.
    api.post(f"{URL}{pk}/stop/")
    stopped = wait_status(api, pk, "stopped", timeout=120, worker=celery_worker)
    assert "Stopped gracefully" in stopped["status_message"]
    run.refresh_from_db()
    assert (run.outcome, run.exit_code, run.host) == ("stopped", 0, "another-host")
    assert wait_for(lambda: gone(run.pid), timeout=30)
    assert "a worker asked to stop the job" in Path(run.log_path).read_text()

    # Resumed; started "there" again, then that host is lost: the job and its supervisor die at once.
    produce(kafka_bootstrap, topic, events("i", 200, 20))
    api.post(f"{URL}{pk}/resume/")
    second = wait_for(lambda: PipelineRun.objects.filter(pipeline_id=pk, ended_at__isnull=True).first(), timeout=60)
    elsewhere(second.pk)
    wait_status(api, pk, "running", worker=celery_worker)  # seen through the lease's application id
    wait_for(lambda: table_counts(ch, table)[1] == 500, timeout=JOB_TIMEOUT)
    os.killpg(second.pid, signal.SIGKILL)

    # Its lease expires; this worker records the loss and starts the pipeline again, on its own host.
    lost = wait_for(
        lambda: PipelineRun.objects.filter(pk=second.pk, ended_at__isnull=False).first(), timeout=LEASE_SECONDS + 60
    )
    assert lost.outcome == "failed" and "another-host stopped renewing its lease" in lost.reason, lost.reason
    third = wait_for(lambda: PipelineRun.objects.filter(pipeline_id=pk, ended_at__isnull=True).first(), timeout=60)
    assert third.host not in ("", "another-host")
    wait_status(api, pk, "running", worker=celery_worker)
    produce(kafka_bootstrap, topic, events("j", 100, 10))
    wait_for(lambda: table_counts(ch, table)[1] == 600, timeout=JOB_TIMEOUT)
    assert table_counts(ch, table) == (600, 600)


def _redis(settings):
    import redis

    return redis.Redis.from_url(settings.REDIS_URL)
