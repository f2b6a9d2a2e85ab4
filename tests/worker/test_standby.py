"""Standby jobs: a deploy runs in the job process the worker started beforehand (JVM and Spark session up),
a new standby takes its place, two pipelines in two standbys share nothing, a stop is a stop; a standby refuses
a run whose heap or static Spark settings it cannot honour; while a standby starts, one deploy waits for it and
the others start cold at once; the stack's stop ends a standby without counting it
as a pipeline job. Real Celery worker, Spark jobs, Kafka and ClickHouse."""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from clearflow_spec.protocol import RunFiles
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
from tests.worker.test_jobs import job_spec
from worker import jobs, standby

pytestmark = [pytest.mark.spark]

STANDBY_START_TIMEOUT = 600  # a JVM, a session and the rehearsal on a loaded 2-core machine (load 30: minutes)


def ready_standby(run_root: Path, *, other_than: set[int] = frozenset()) -> standby.Standby | None:
    found = [s for s in standby.waiting(run_root) if s.ready and s.handle.pid not in other_than]
    return found[0] if found else None


def active_run(api, pk: int) -> dict:
    [run] = [run for run in api.get(f"{URL}{pk}/runs/").json() if run["ended_at"] is None]
    return run


def gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.timeout(1800)  # two standbys' and two pipelines' starts on the shared cores
@pytest.mark.django_db(transaction=True)
def test_a_deploy_runs_in_the_standby_job_and_a_new_standby_takes_its_place(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker, worker_env
):
    run_root = Path(worker_env["CLEARFLOW_RUN_ROOT"])
    table_a, table_b = f"sb_a_{uuid.uuid4().hex[:8]}", f"sb_b_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, events("a", 500, 50))
    worker_env["CLEARFLOW_STANDBY"] = "1"  # the product's default (the other worker tests turn it off)
    celery_worker.start()
    first = wait_for(lambda: ready_standby(run_root), timeout=STANDBY_START_TIMEOUT, interval=0.5)

    pk_a = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table_a))
    api.post(f"{URL}{pk_a}/deploy/")
    wait_status(api, pk_a, "running", worker=celery_worker)
    wait_for(lambda: table_counts(ch, table_a) == (500, 500), timeout=JOB_TIMEOUT)
    run_a = active_run(api, pk_a)
    assert run_a["pid"] == first.handle.pid, (run_a, first)  # the standby's process runs it
    assert run_a["start"].startswith("In a standby job"), run_a["start"]
    assert Path(run_a["log_path"]).parent == first.directory
    # The run's sizing reaches the standby's session: a light pipeline's dedup state in one partition.
    assert "standby: spark.sql.shuffle.partitions=1 for this pipeline" in Path(run_a["log_path"]).read_text()
    spec_file = first.directory / RunFiles.SPEC
    assert spec_file.exists() and (spec_file.stat().st_mode & 0o777) == 0o600
    job = psutil.Process(run_a["pid"])
    for process in [job, *job.children(recursive=True)]:  # connection details are in the spec file only
        if process.status() != psutil.STATUS_ZOMBIE:
            assert kafka_bootstrap not in " ".join(process.cmdline())
    # The standby waited at the worker's priority, so this first batch went before busy jobs; after it the job
    # runs where a job started cold runs (CLEARFLOW_JOB_NICENESS, 10), its supervisor still at the worker's.
    [jvm] = [p for p in job.children(recursive=True) if p.name() == "java"]
    wait_for(lambda: jvm.nice() == min(19, psutil.Process().nice() + 10), timeout=60)
    assert "CPU priority lowered" in Path(run_a["log_path"]).read_text()
    assert job.nice() == psutil.Process().nice()
    # A light pipeline (a quiet topic): its job then yields the CPU to everything else, a new deploy's first batch
    # included (CLEARFLOW_LIGHT_JOBS_IDLE): every thread of its JVM and Python processes in the idle class.
    wait_for(lambda: "threads in the idle CPU class" in Path(run_a["log_path"]).read_text(), timeout=60)
    [runner] = job.children()
    for process in [runner, *runner.children(recursive=True)]:
        for thread in process.threads():
            with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
                assert os.sched_getscheduler(thread.id) == os.SCHED_IDLE, (process.cmdline()[:3], thread.id)
    assert os.sched_getscheduler(job.pid) != os.SCHED_IDLE  # the supervisor renews the run's lease on time

    # A new standby appears once the first pipeline runs; the second pipeline runs in it, on its own topic.
    second = wait_for(
        lambda: ready_standby(run_root, other_than={first.handle.pid}), timeout=STANDBY_START_TIMEOUT, interval=0.5
    )
    # Started as soon as the first was taken, beside that deploy's first batch: at the jobs' lower priority.
    [waiting_jvm] = [p for p in psutil.Process(second.handle.pid).children(recursive=True) if p.name() == "java"]
    assert waiting_jvm.nice() == min(19, psutil.Process().nice() + 10)
    topic_b = f"{topic}-b"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic_b, 2, 1)])[topic_b].result(30)
    produce(kafka_bootstrap, topic_b, events("b", 300, 30))
    pk_b = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic_b, table_b))
    api.post(f"{URL}{pk_b}/deploy/")
    wait_status(api, pk_b, "running", worker=celery_worker)
    wait_for(lambda: table_counts(ch, table_b) == (300, 300), timeout=JOB_TIMEOUT)
    run_b = active_run(api, pk_b)
    assert run_b["pid"] == second.handle.pid and run_b["start"].startswith("In a standby job")
    assert run_b["spark_app_id"] != run_a["spark_app_id"]
    # Nothing of one pipeline in the other's table or application.
    assert ch.command(f"SELECT countIf(startsWith(event_id, 'b-')) FROM `{table_a}`") == 0
    assert ch.command(f"SELECT countIf(startsWith(event_id, 'a-')) FROM `{table_b}`") == 0

    # A stop is a stop: the standby's process ends with its pipeline, the other pipeline runs on.
    api.post(f"{URL}{pk_a}/stop/")
    stopped = wait_status(api, pk_a, "stopped", timeout=120, worker=celery_worker)
    assert "Stopped gracefully" in stopped["status_message"]
    assert gone(run_a["pid"]) and not spec_file.exists()
    [ended] = api.get(f"{URL}{pk_a}/runs/").json()
    assert ended["outcome"] == "stopped" and ended["exit_code"] == 0
    produce(kafka_bootstrap, topic_b, events("c", 100, 0))
    wait_for(lambda: table_counts(ch, table_b) == (400, 400), timeout=JOB_TIMEOUT)
    assert wait_status(api, pk_b, "running")["status"] == "running"


@pytest.mark.timeout(2400)  # four standbys' and three pipelines' starts on the shared cores
@pytest.mark.django_db(transaction=True)
def test_deploys_one_after_the_other_each_start_in_a_standby_of_the_pool_which_refills(
    api, kafka_conn, ch_conn, kafka_bootstrap, ch, celery_worker, worker_env, settings
):
    from worker.stack_stop import stop_stack_jobs

    # Two standbys show what a pool does (the default on 24 GiB is 4, which would only add JVM starts here).
    pool = 2
    run_root = Path(worker_env["CLEARFLOW_RUN_ROOT"])
    worker_env["CLEARFLOW_STANDBY"] = str(pool)
    worker_env["CLEARFLOW_STANDBY_WAIT"] = str(STANDBY_START_TIMEOUT)  # a loaded machine's JVM start, not a rule
    names = ["a", "b", "c"]
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topics = {name: f"pool-{name}-{uuid.uuid4().hex[:8]}" for name in names}
    for future in admin.create_topics([NewTopic(t, 2, 1) for t in topics.values()]).values():
        future.result(30)
    for name in names:
        produce(kafka_bootstrap, topics[name], events(name, 200, 20))
    celery_worker.start()

    # The pool fills one standby at a time: the first is ready sooner than with two JVMs starting together.
    most_starting = 0

    def pool_full() -> bool:
        nonlocal most_starting
        found = standby.waiting(run_root)
        most_starting = max(most_starting, sum(not s.ready for s in found))
        return len(found) == pool and all(s.ready for s in found)

    wait_for(pool_full, timeout=STANDBY_START_TIMEOUT * pool, interval=0.2)
    assert most_starting == 1
    first_pool = {s.handle.pid for s in standby.waiting(run_root)}

    # A person deploys one pipeline after the other, each once the previous one's rows are there: every one
    # runs in a standby, the third in one started since.
    runs = {}
    for name in names:
        table = f"pool_{name}_{uuid.uuid4().hex[:8]}"
        pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topics[name], table))
        api.post(f"{URL}{pk}/deploy/")
        wait_status(api, pk, "running", worker=celery_worker)
        wait_for(lambda table=table: table_counts(ch, table) == (200, 200), timeout=JOB_TIMEOUT)
        runs[name] = active_run(api, pk)
        assert runs[name]["start"].startswith("In a standby job"), runs[name]["start"]
    assert len({run["pid"] for run in runs.values()}) == 3
    assert {runs["a"]["pid"], runs["b"]["pid"]} == first_pool
    # The third standby started as soon as the first deploy took one, beside its first batch: below it, where a
    # cold job runs.
    described = sorted(standby.root(run_root).glob(f"*/{RunFiles.STANDBY}"), key=lambda path: path.stat().st_mtime)
    third = json.loads(described[2].read_text())
    assert third["niceness"] == 10
    [jvm] = [p for p in psutil.Process(third["pid"]).children(recursive=True) if p.name() == "java"]
    assert jvm.nice() == min(19, psutil.Process().nice() + 10)

    # The pool refills while the pipelines run.
    taken = {run["pid"] for run in runs.values()}
    wait_for(
        lambda: len([s for s in standby.waiting(run_root) if s.ready and s.handle.pid not in taken]) == pool,
        timeout=STANDBY_START_TIMEOUT * pool,
        interval=0.5,
    )

    # The stack's stop leaves nothing running: the pipelines' jobs and the waiting standbys.
    celery_worker.stop()
    everything = [handle.pid for handle in jobs.find_jobs(run_root)]
    assert len(everything) == 3 + pool
    settings.CLEARFLOW_RUN_ROOT = str(run_root)
    assert stop_stack_jobs(timeout=60).jobs == 3  # the standbys are no pipeline's jobs
    assert all(gone(pid) for pid in everything)
    assert jobs.find_jobs(run_root) == []


def template(run_root: Path, **overrides) -> jobs.JobLaunch:
    values = {
        "name": "standby",
        "run_dir": run_root,
        "checkpoint": "",
        "master": "local[2]",
        "spec": None,
        "driver_memory": "1g",
        "spark_conf": ("spark.ui.enabled=false",),
    }
    return jobs.JobLaunch(**{**values, **overrides})


@pytest.mark.timeout(1200)  # two standbys' starts
@pytest.mark.django_db(transaction=True)
def test_a_standby_refuses_what_it_cannot_honour_and_the_stacks_stop_ends_it_uncounted(tmp_path, settings):
    from worker.stack_stop import stop_stack_jobs

    run_root = tmp_path / "runs"
    [started] = standby.ensure(template(run_root), run_root=run_root, count=1)
    try:
        waiting = wait_for(lambda: ready_standby(run_root), timeout=STANDBY_START_TIMEOUT, interval=0.5)
        assert waiting.handle.pid == started.handle.pid
        assert standby.ensure(template(run_root), run_root=run_root, count=1) == []  # one is enough

        def launch(**overrides) -> jobs.JobLaunch:
            values = {"name": "pipeline-1", "run_dir": run_root / "x", "spec": job_spec(), "checkpoint": "/nowhere"}
            return template(run_root, **{**values, **overrides})

        # A run sized for another heap: the worker does not even ask.
        refused = standby.take(launch(driver_memory="2g"), run_root=run_root, wait=5)
        assert refused == "the pipeline is sized for a 2g heap and the standby job has 1g"
        # A static setting the session was started without: the standby itself refuses, and goes on waiting.
        refused = standby.take(launch(spark_conf=("spark.ui.enabled=true",)), run_root=run_root, wait=5)
        assert "spark.ui.enabled=true needs a new JVM" in refused, refused
        assert not (waiting.directory / RunFiles.SPEC).exists()  # the refused run's spec (secrets) is gone
        assert ready_standby(run_root) == waiting

        # Other settings replace it at the watcher's next look (ensure).
        [replacement] = standby.ensure(template(run_root, driver_memory="768m"), run_root=run_root, count=1)
        assert wait_for(lambda: gone(waiting.handle.pid), timeout=60)

        settings.CLEARFLOW_RUN_ROOT = str(run_root)
        result = stop_stack_jobs(timeout=30)
        assert result.jobs == 0  # a standby is no pipeline's job
        assert gone(replacement.handle.pid)
        assert not jobs.find_jobs(run_root)
    finally:
        for handle in jobs.find_jobs(run_root):
            jobs.force_kill(pid=handle.pid, process_started=handle.process_started)


@pytest.mark.timeout(300)
def test_while_a_standby_starts_one_deploy_waits_for_it_and_the_others_start_cold_at_once(tmp_path):
    run_root = tmp_path / "runs"
    [started] = standby.ensure(template(run_root), run_root=run_root, count=1)  # its JVM takes seconds to start
    try:

        def launch(name: str) -> jobs.JobLaunch:
            return template(run_root, name=name, run_dir=run_root / name, spec=job_spec(), checkpoint="/nowhere")

        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(standby.take, launch("pipeline-1"), run_root=run_root, wait=3)
            wait_for(lambda: (started.directory / standby.CLAIMED).exists(), timeout=10, interval=0.05)
            began = time.monotonic()
            second = standby.take(launch("pipeline-2"), run_root=run_root, wait=3)
            assert time.monotonic() - began < 1.0  # no wait: the worker starts pipeline-2 cold at once
            assert second == "the standby job was taken by another deploy"
            assert first.result() == "the standby job was not ready within 3 s"
        # The wait is over: the standby is free again for the next deploy.
        assert [s.handle.pid for s in standby.waiting(run_root)] == [started.handle.pid]
        assert not (started.directory / standby.CLAIMED).exists()
    finally:
        for handle in jobs.find_jobs(run_root):
            jobs.force_kill(pid=handle.pid, process_started=handle.process_started)


@pytest.mark.timeout(1200)  # a standby's start and rehearsal on the shared cores
def test_a_light_standby_starts_its_jvm_lean_and_rehearses_a_pipeline_with_it(tmp_path):
    # The standby a light deploy starts in has the light heap, so the light heap's JVM options
    # (clearflow_spec.sizing.LIGHT_JAVA_OPTIONS): it runs the rehearsal (parse, dedup on RocksDB, foreachBatch with
    # Arrow into a file) with them before it says it is ready.
    run_root = tmp_path / "runs"
    [started] = standby.ensure(template(run_root, driver_memory="512m"), run_root=run_root, count=1)
    try:
        waiting = wait_for(lambda: ready_standby(run_root), timeout=STANDBY_START_TIMEOUT, interval=0.5)
        assert waiting.handle.pid == started.handle.pid and waiting.driver_memory == "512m"
        [jvm] = [p for p in psutil.Process(started.handle.pid).children(recursive=True) if p.name() == "java"]
        assert {"-Xmx512m", "-XX:+UseSerialGC", "-Xms32m", "-XX:TieredStopAtLevel=1"} <= set(jvm.cmdline())
    finally:
        for handle in jobs.find_jobs(run_root):
            jobs.force_kill(pid=handle.pid, process_started=handle.process_started)
