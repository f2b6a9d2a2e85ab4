"""Deploy, watch, stop, resume through the API with a real Celery worker, real Spark jobs, Kafka and ClickHouse."""

from __future__ import annotations

import os
import signal
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


def active_run(api, pk: int) -> dict:
    runs = [run for run in api.get(f"{URL}{pk}/runs/").json() if run["ended_at"] is None]
    assert len(runs) == 1, runs
    return runs[0]


def exactly(ch, table: str, unique: int) -> bool:
    return table_counts(ch, table) == (unique, unique)


def test_deploy_runs_writes_each_event_once_and_stop_then_resume_loses_nothing(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker
):
    table = f"runs_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, events("a", 2000, 300))
    celery_worker.start()
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table))

    assert api.post(f"{URL}{pk}/deploy/").json()["status"] == "deploy_requested"
    running = wait_status(api, pk, "running", worker=celery_worker)
    assert "Version 1 running" in running["status_message"]
    wait_for(lambda: exactly(ch, table, 2000), timeout=JOB_TIMEOUT)
    run = active_run(api, pk)
    assert run["version"] == 1 and run["pid"] and run["spark_app_id"].startswith("local-")
    spec_file = Path(run["log_path"]).parent / "spec.json"
    assert spec_file.exists() and (spec_file.stat().st_mode & 0o777) == 0o600
    job = psutil.Process(run["pid"])
    for process in [job, *job.children(recursive=True)]:  # connection details are in the spec file only
        if process.status() != psutil.STATUS_ZOMBIE:
            assert kafka_bootstrap not in " ".join(process.cmdline())
    log = wait_for(lambda: api.get(f"{URL}{pk}/log/").json()["lines"], timeout=60)
    assert any(f"pipeline-{pk} started" in line for line in log)

    assert api.post(f"{URL}{pk}/stop/").json()["status"] == "stop_requested"
    stopped = wait_status(api, pk, "stopped", timeout=120, worker=celery_worker)
    assert "Stopped gracefully" in stopped["status_message"]
    assert not psutil.pid_exists(run["pid"]) or psutil.Process(run["pid"]).status() == psutil.STATUS_ZOMBIE
    assert not spec_file.exists()
    [ended] = api.get(f"{URL}{pk}/runs/").json()
    assert ended["outcome"] == "stopped" and ended["exit_code"] == 0

    # While stopped: new events, and repeats of events already written.
    produce(kafka_bootstrap, topic, events("b", 1000, 200) + events("a", 100, 0))
    assert exactly(ch, table, 2000)
    assert api.post(f"{URL}{pk}/resume/").json()["status"] == "deploy_requested"
    wait_status(api, pk, "running", worker=celery_worker)
    wait_for(lambda: table_counts(ch, table)[0] >= 3000, timeout=JOB_TIMEOUT)
    assert exactly(ch, table, 3000)

    history = [(h["from_status"], h["to_status"]) for h in reversed(api.get(f"{URL}{pk}/history/").json())]
    assert history == [
        ("draft", "deploy_requested"),
        ("deploy_requested", "running"),
        ("running", "stop_requested"),
        ("stop_requested", "stopped"),
        ("stopped", "deploy_requested"),
        ("deploy_requested", "running"),
    ]
    health = api.get("/api/v1/health").json()["components"]
    assert health["pipelines"]["detail"].startswith("1 running")
    assert health["celery"]["ok"], health["celery"]


# A job SIGKILLed by the worker's watch: tests/worker/test_isolation.py (restarted, its run and history in words,
# its dedup state back from the checkpoint) and test_control_plane_faults.py (under a steady load, exactly once).
def kill_job(pid: int) -> None:
    """SIGKILL to the job's whole process group: supervisor, driver, JVM, Python workers (a crash of the host's
    processes, as far as one test can make one)."""
    os.killpg(pid, signal.SIGKILL)


def test_restarting_the_worker_leaves_the_job_running_and_the_new_worker_adopts_it(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker
):
    table = f"runs_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, events("w", 1000, 100))
    celery_worker.start()
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table))
    api.post(f"{URL}{pk}/deploy/")
    wait_status(api, pk, "running", worker=celery_worker)
    wait_for(lambda: exactly(ch, table, 1000), timeout=JOB_TIMEOUT)
    run = active_run(api, pk)

    celery_worker.stop()
    assert psutil.Process(run["pid"]).is_running()
    produce(kafka_bootstrap, topic, events("x", 500, 50))
    wait_for(lambda: exactly(ch, table, 1500), timeout=JOB_TIMEOUT)  # it runs without a worker
    celery_worker.start()

    # The new worker watches it (a stop goes through it) and did not start a second job.
    assert api.post(f"{URL}{pk}/stop/").json()["status"] == "stop_requested"
    wait_status(api, pk, "stopped", timeout=120, worker=celery_worker)
    [only] = api.get(f"{URL}{pk}/runs/").json()
    assert only["id"] == run["id"] and only["outcome"] == "stopped"
    assert not psutil.pid_exists(run["pid"]) or psutil.Process(run["pid"]).status() == psutil.STATUS_ZOMBIE
    assert exactly(ch, table, 1500)


def test_a_job_that_fails_at_once_ends_failed_with_clickhouses_message_after_the_attempts(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker, worker_env
):
    table = f"runs_{uuid.uuid4().hex[:8]}"
    # An existing table whose `n` column cannot take the job's Int64 values: every insert is rejected.
    ch.command(
        f"CREATE TABLE `{table}` (event_id String, user_id Nullable(UUID), n Array(String)) "
        "ENGINE = MergeTree ORDER BY event_id"
    )
    produce(kafka_bootstrap, topic, events("f", 10, 0))
    worker_env["CLEARFLOW_RESTART_MAX_ATTEMPTS"] = "1"
    celery_worker.start()
    spec = api_spec(topic, table)
    spec["sink"]["create_table"] = False
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=spec)
    api.post(f"{URL}{pk}/deploy/")

    def gave_up() -> dict | None:
        status = api.get(f"{URL}{pk}/status/").json()
        return status if status["status"] == "failed" and status["restart_at"] is None else None

    final = wait_for(gave_up, timeout=2 * JOB_TIMEOUT, interval=0.5)
    message = final["status_message"]
    assert message.startswith(f"Failed: ClickHouse refused the write: insert into default.{table} "), message
    assert "Code:" in message and "Traceback" not in message, message  # ClickHouse's own message
    assert "Gave up after 2 failed attempts (limit: 1 restarts)" in message
    runs = api.get(f"{URL}{pk}/runs/").json()
    assert [(r["attempt"], r["outcome"], r["exit_code"], r["cause"]) for r in runs] == [
        (2, "failed", 1, "clickhouse_error"),
        (1, "failed", 1, "clickhouse_error"),
    ]
    assert ch.command(f"SELECT count() FROM `{table}`") == 0
    health = api.get("/api/v1/health").json()
    assert "pipelines" in health["down"] and "1 failed" in health["components"]["pipelines"]["detail"]
