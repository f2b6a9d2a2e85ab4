"""A real Celery worker with beat runs the duplicate audit: the periodic round gives a running pipeline its
audited table and checks it, and a check that meets a transient ClickHouse error is retried, then stored."""

from __future__ import annotations

import uuid

import pytest

from localstack.processes import free_port
from tests.pipeline_states import walk_to
from tests.spark_jobs.engine_helpers import wait_for
from tests.webapp.audits.conftest import create_pipeline_table, insert_orders
from tests.webapp.conftest import orders_spec
from webapp.audits import selectors
from webapp.audits.models import AuditedTable, AuditResult
from webapp.connections.services import clickhouse_connection_create
from webapp.pipelines import services as pipeline_services
from webapp.pipelines.models import PipelineStatus

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def audit_worker_env(worker_env):
    worker_env["CLEARFLOW_AUDIT_INTERVAL"] = "2"
    worker_env["CLEARFLOW_AUDIT_RETRY_DELAY"] = "0.2"
    # The pipeline below is marked running without a Spark job: the watcher must not tick (it would fail it).
    worker_env["CLEARFLOW_WATCH_INTERVAL"] = "3600"
    return worker_env


def test_the_beat_audits_a_running_pipelines_table(
    audit_worker_env, celery_worker, owner, kafka_conn, ch_conn, topic, ch
):
    table = create_pipeline_table(ch, f"cf_audit_{uuid.uuid4().hex[:8]}")
    insert_orders(ch, table, [1, 2, 2, 3, 3, 3])
    insert_orders(ch, table, [4, 4], hours_ago=2)  # before the last hour
    pipeline = pipeline_services.pipeline_create(
        owner=owner,
        name="audited-by-beat",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topic, table.database, create_table=True),
    )
    walk_to(pipeline, PipelineStatus.RUNNING)

    celery_worker.start()
    result = wait_for(lambda: selectors.latest_result_for_pipeline(pipeline_id=pipeline.pk), timeout=90)

    assert (result.duplicate_keys, result.duplicate_rows, result.error) == (2, 5, ""), celery_worker.log_tail()
    assert result.audited_table.table == "orders" and result.audited_table.key_columns == ["order_id"]
    # The dedup window of orders_spec is 1h: one window only.
    assert set(
        AuditResult.objects.filter(audited_table=result.audited_table).values_list("window_seconds", flat=True)
    ) == {3600}


def test_a_transient_error_is_retried_then_stored(audit_worker_env, celery_worker, owner):
    closed = clickhouse_connection_create(owner=owner, data={"name": "down", "host": "127.0.0.1", "port": free_port()})
    # Created directly: the server (or the table) went away after the table was added.
    audited = AuditedTable.objects.create(
        owner=owner,
        workspace=closed.workspace,
        connection=closed,
        database="db",
        table="events",
        key_columns=["id"],
        time_column="at",
    )

    celery_worker.start()
    result = wait_for(lambda: selectors.latest_result(audited_table_id=audited.pk), timeout=90)

    assert result.duplicate_keys is None and "connection refused" in result.error
    log = celery_worker.log_path.read_text(errors="replace")
    assert log.count("clearflow.audit_table_check") and "Retry in" in log, celery_worker.log_tail()
