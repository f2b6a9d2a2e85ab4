"""Deploy, watch, stop, resume through the API with a real Celery worker, real Spark jobs, Kafka and ClickHouse."""

from __future__ import annotations

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


@pytest.fixture(scope="session")
def ch(clickhouse_server):
    import clickhouse_connect

    return clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)


@pytest.fixture
def topic(kafka_bootstrap):
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"runs-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    return name


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
