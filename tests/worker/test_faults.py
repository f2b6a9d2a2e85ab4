"""Faults under a running pipeline, with real services: ClickHouse stopped for 60 s, the Kafka broker restarted.

Each test runs its own ClickHouse or broker (the session's are shared with other tests), stops it under a running
job, starts it again on the same port and data, and checks that the job carries on by itself (restarted by the
watcher when it had to give up) and that ClickHouse ends with each unique event exactly once.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import clickhouse_connect
import pytest

from localstack import processes, service_defs
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
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]

OUTAGE_SECONDS = 60


def start_clickhouse(port: int, data_dir: Path, log_dir: Path) -> processes.ProcessGroup:
    group = processes.ProcessGroup(log_dir)
    group.start(service_defs.clickhouse(port=port, data_dir=data_dir))
    return group


def test_clickhouse_stopped_for_a_minute_loses_nothing_and_doubles_nothing(
    api, owner, kafka_conn, kafka_bootstrap, topic, celery_worker, tmp_path
):
    port, data_dir = processes.free_port(), tmp_path / "clickhouse"
    group = start_clickhouse(port, data_dir, tmp_path / "ch-logs-1")
    try:
        ch = clickhouse_connect.get_client(host="127.0.0.1", port=port)
        ch_conn = clickhouse_connection_create(
            owner=owner, data={"name": "own clickhouse", "host": "127.0.0.1", "port": port}
        )
        table = f"faults_{uuid.uuid4().hex[:8]}"
        produce(kafka_bootstrap, topic, events("before", 2000, 200))
        celery_worker.start()
        pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table))
        assert api.post(f"{URL}{pk}/deploy/").json()["status"] == "deploy_requested"
        wait_status(api, pk, "running", worker=celery_worker)
        wait_for(lambda: table_counts(ch, table) == (2000, 2000), timeout=JOB_TIMEOUT)

        group.stop_all()  # ClickHouse goes away under the running job ...
        produce(kafka_bootstrap, topic, events("during", 1500, 150))
        time.sleep(OUTAGE_SECONDS)  # ... for the length of the outage (the fault itself, not a wait for a result)
        group = start_clickhouse(port, data_dir, tmp_path / "ch-logs-2")
        ch = clickhouse_connect.get_client(host="127.0.0.1", port=port)

        wait_for(lambda: table_counts(ch, table) == (3500, 3500), timeout=JOB_TIMEOUT + 120)
        assert wait_status(api, pk, "running", worker=celery_worker)["status"] == "running"
        produce(kafka_bootstrap, topic, events("after", 500, 50))
        wait_for(lambda: table_counts(ch, table) == (4000, 4000), timeout=JOB_TIMEOUT)
    finally:
        group.stop_all()


def test_broker_restart_loses_nothing_and_doubles_nothing(api, owner, ch_conn, ch, celery_worker, tmp_path):
    port, controller_port, data_dir = processes.free_port(), processes.free_port(), tmp_path / "kafka"

    def start_broker(log_dir: Path) -> processes.ProcessGroup:
        group = processes.ProcessGroup(log_dir)
        group.start(service_defs.kafka_broker(port=port, controller_port=controller_port, data_dir=data_dir))
        return group

    group = start_broker(tmp_path / "kafka-logs-1")
    try:
        bootstrap = f"127.0.0.1:{port}"
        from confluent_kafka.admin import AdminClient, NewTopic

        topic = f"faults-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept referenced until the future resolves
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
        kafka_conn = kafka_connection_create(owner=owner, data={"name": "own kafka", "bootstrap_servers": bootstrap})
        table = f"faults_{uuid.uuid4().hex[:8]}"
        produce(bootstrap, topic, events("before", 2000, 200))
        celery_worker.start()
        pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table))
        assert api.post(f"{URL}{pk}/deploy/").json()["status"] == "deploy_requested"
        wait_status(api, pk, "running", worker=celery_worker)
        wait_for(lambda: table_counts(ch, table) == (2000, 2000), timeout=JOB_TIMEOUT)

        group.stop_all()  # the broker restarts under the running job
        group = start_broker(tmp_path / "kafka-logs-2")
        produce(bootstrap, topic, events("after", 1500, 150))

        wait_for(lambda: table_counts(ch, table) == (3500, 3500), timeout=JOB_TIMEOUT + 120)
        assert wait_status(api, pk, "running", worker=celery_worker)["status"] == "running"
    finally:
        group.stop_all()
