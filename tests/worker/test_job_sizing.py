"""A deployed job gets the memory its dedup state needs: with CLEARFLOW_DRIVER_MEMORY=auto the worker starts it
with the sized heap and RocksDB's memory bound (worker.job_sizing), and it runs with them (and with
bounded malloc arenas, and a light heap's lean JVM) and writes every row."""

from __future__ import annotations

import contextlib
import os
import re
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

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]


def job_command_line(pid: int) -> str:
    """The command lines of the job's processes (a Python worker that just ended, a zombie until reaped, has none)."""
    job = psutil.Process(pid)
    args = []
    for process in [job, *job.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            args += process.cmdline()
    return " ".join(args)


def test_auto_starts_the_job_with_the_sized_heap_and_rocksdb_bound(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker, worker_env
):
    table = f"sized_{uuid.uuid4().hex[:8]}"
    # 3,000 events written now (50 events/s over the last minute), a 1-hour window: 180,000 keys in one state
    # partition, whose file's index and filter blocks each of RocksDB's 64 cache shards must have room for: a 192 MB
    # bound (clearflow_spec.sizing.rocksdb_memory_mb); a light pipeline (at most 1,000 events/s and 3.6M keys): the
    # light 512 MB heap, not the full 1 GB.
    produce(kafka_bootstrap, topic, events("s", 2500, 500))
    worker_env["CLEARFLOW_DRIVER_MEMORY"] = "auto"
    worker_env["CLEARFLOW_TRIGGER_INTERVAL"] = "auto"  # the tests' worker has a fixed one
    celery_worker.start()
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table))
    api.post(f"{URL}{pk}/deploy/")
    wait_status(api, pk, "running", worker=celery_worker)
    [run] = [r for r in api.get(f"{URL}{pk}/runs/").json() if r["ended_at"] is None]
    command = job_command_line(run["pid"])
    assert "--driver-memory 512m" in command
    # On the command line of a job started cold; handed over with the spec to a standby job (its JVM already
    # runs): the job says what it runs with either way.
    log = wait_for(lambda: "started (query" in Path(run["log_path"]).read_text() and Path(run["log_path"]).read_text())
    assert f"pipeline-{pk}: dedup state in RocksDB, memory bound 192 MB" in log
    # A light pipeline's micro-batches hold about 500 events: at 50 events/s, one every 5 s (the longest); its
    # dedup state is one partition (one RocksDB instance) instead of one per core.
    assert "trigger 5 seconds)" in log
    state = Path(re.search(r"checkpoint (\S+), trigger", log).group(1)) / "state" / "0"
    wait_for(lambda: state.is_dir() and any(state.iterdir()), timeout=JOB_TIMEOUT)
    # The JVM (RocksDB's allocations) runs with two malloc arenas, so its RSS stays near the bounds above.
    job = psutil.Process(run["pid"])
    [jvm] = [p for p in job.children(recursive=True) if p.name() == "java"]
    assert jvm.environ().get("MALLOC_ARENA_MAX") == "2"
    assert "-Xmx512m" in jvm.cmdline()  # the heap the JVM really has
    # ... and the light heap's lean JVM (clearflow_spec.sizing.LIGHT_JAVA_OPTIONS), cold or in a standby alike.
    assert {"-XX:+UseSerialGC", "-Xms32m", "-XX:TieredStopAtLevel=1"} <= set(jvm.cmdline())
    # It yields the CPU to the web app and the services (CLEARFLOW_JOB_NICENESS, 10 by default); its supervisor,
    # which renews the run's lease, does not.
    assert jvm.nice() == min(19, psutil.Process().nice() + 10)
    assert job.nice() == psutil.Process().nice()
    [run] = [r for r in api.get(f"{URL}{pk}/runs/").json() if r["ended_at"] is None]
    assert run["driver_memory"] == "512m"  # what the run's record (and a failure's advice) says it ran with
    wait_for(lambda: table_counts(ch, table) == (2500, 2500), timeout=JOB_TIMEOUT)
    assert sorted(path.name for path in state.iterdir() if path.name.isdigit()) == ["0"]
    # Once its first micro-batch is done, a light pipeline's job runs in the idle CPU class (started cold too).
    wait_for(lambda: "threads in the idle CPU class" in Path(run["log_path"]).read_text(), timeout=JOB_TIMEOUT)
    assert os.sched_getscheduler(jvm.pid) == os.SCHED_IDLE
    assert os.sched_getscheduler(job.pid) != os.SCHED_IDLE
    api.post(f"{URL}{pk}/stop/")
    wait_status(api, pk, "stopped", timeout=120, worker=celery_worker)
