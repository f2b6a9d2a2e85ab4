"""Exactly-once on an existing table: a MergeTree table without `non_replicated_deduplication_window` is
reported as at-least-once, with the exact ALTER statement, by the API's validation, the pipeline's detail,
the pipeline page, the wizard's table step and the job's start log; applying the statement (the page's
button, the wizard's button, or the API) makes all of them say exactly-once. Real ClickHouse throughout."""

from __future__ import annotations

import logging
import re
import uuid

import clickhouse_connect
import pytest
from django.urls import reverse

from spark_jobs import run
from tests.webapp.conftest import orders_spec
from tests.webapp.heavy import answered
from webapp.pipelines import stored_specs

URL = "/api/v1/pipelines/"
pytestmark = pytest.mark.django_db


@pytest.fixture
def bare_table(clickhouse_server, clickhouse_target):
    """A copy of `orders` as many users create their own tables: MergeTree, no insert deduplication."""
    table = f"orders_{uuid.uuid4().hex[:8]}"
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    try:
        client.command(
            f"CREATE TABLE `{clickhouse_target.database}`.`{table}` (order_id UUID, seq Int64, amount Float64, "
            "customer_name Nullable(String)) ENGINE = MergeTree ORDER BY order_id"
        )
        yield table
    finally:
        client.command(f"DROP TABLE IF EXISTS `{clickhouse_target.database}`.`{table}`")
        client.close()


def engine_full(server, database: str, table: str) -> str:
    client = clickhouse_connect.get_client(host=server.host, port=server.port)
    try:
        return client.query(
            "SELECT engine_full FROM system.tables WHERE database = {db:String} AND name = {t:String}",
            parameters={"db": database, "t": table},
        ).result_rows[0][0]
    finally:
        client.close()


@pytest.fixture
def pipeline_id(api, kafka_conn, ch_conn, topics, clickhouse_target, bare_table):
    spec = orders_spec(topics.orders, clickhouse_target.database)
    spec["sink"]["table"] = bare_table
    body = {"name": "bare", "kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec}
    response = api.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def job_log(caplog, pipeline, kafka_conn, ch_conn) -> str:
    """The line the job logs at start about its guarantee (the job's own function, on the job's spec)."""
    job_spec = stored_specs.with_connections(
        pipeline.spec, name=pipeline.name, kafka_connection=kafka_conn, clickhouse_connection=ch_conn
    )
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="clearflow.run"):
        run._log_guarantee(job_spec)
    return "\n".join(r.getMessage() for r in caplog.records)


def test_a_table_without_insert_dedup_is_at_least_once_until_the_alter_is_applied(
    api, client, owner, pipeline_id, clickhouse_server, clickhouse_target, bare_table, kafka_conn, ch_conn, caplog
):
    from webapp.pipelines.models import Pipeline

    database = clickhouse_target.database
    alter = f"ALTER TABLE `{database}`.`{bare_table}` MODIFY SETTING non_replicated_deduplication_window = 1000"

    validated = answered(api, api.post(f"{URL}{pipeline_id}/validate/", {"check_live": True}, format="json"))
    assert validated.status_code == 200, validated.json()
    body = validated.json()
    assert body["valid"] is True
    assert body["delivery"]["guarantee"] == "at-least-once"
    assert body["delivery"]["fix_sql"] == alter
    assert body["warnings"] == [{"path": "sink.table", "message": body["warnings"][0]["message"], "fix_sql": alter}]
    assert "At-least-once" in body["warnings"][0]["message"] and alter in body["warnings"][0]["message"]
    assert api.get(f"{URL}{pipeline_id}/").json()["delivery"]["guarantee"] == "at-least-once"

    client.force_login(owner)
    page = client.get(reverse("pipelines:detail", kwargs={"pk": pipeline_id})).content.decode()
    assert reverse("pipelines:exactly_once", kwargs={"pk": pipeline_id}) in page  # loaded by htmx
    panel = client.get(reverse("pipelines:exactly_once", kwargs={"pk": pipeline_id})).content.decode()
    assert "at-least-once" in panel
    assert alter.replace("`", "&#x60;") in panel or alter in panel
    assert 'id="table-dedup-apply"' in panel

    pipeline = Pipeline.objects.get(pk=pipeline_id)
    logged = job_log(caplog, pipeline, kafka_conn, ch_conn)
    assert f"pipeline bare: at-least-once: {database}.{bare_table} (MergeTree)" in logged
    assert alter in logged
    assert "non_replicated_deduplication_window" not in engine_full(clickhouse_server, database, bare_table)

    # The page's button runs the statement on the real table.
    applied = client.post(reverse("pipelines:exactly_once_apply", kwargs={"pk": pipeline_id})).content.decode()
    assert 'id="table-dedup-ok"' in applied and "exactly-once" in applied
    assert "non_replicated_deduplication_window = 1000" in engine_full(clickhouse_server, database, bare_table)

    body = answered(api, api.post(f"{URL}{pipeline_id}/validate/", {"check_live": True}, format="json")).json()
    assert body["delivery"]["guarantee"] == "exactly-once" and body["warnings"] == []
    assert api.get(f"{URL}{pipeline_id}/").json()["delivery"] == {
        "guarantee": "exactly-once",
        "reason": f"{database}.{bare_table} (MergeTree) drops replayed inserts among its last 1000 "
        "(non_replicated_deduplication_window)",
        "fix_sql": None,
    }
    assert f"pipeline bare: exactly-once: {database}.{bare_table}" in job_log(caplog, pipeline, kafka_conn, ch_conn)


def test_the_api_applies_the_setting(api, pipeline_id, clickhouse_server, clickhouse_target, bare_table):
    response = api.post(f"{URL}{pipeline_id}/table-dedup/")
    assert response.status_code == 200, response.json()
    assert response.json()["guarantee"] == "exactly-once"
    assert "non_replicated_deduplication_window = 1000" in engine_full(
        clickhouse_server, clickhouse_target.database, bare_table
    )


def test_validate_without_check_live_makes_no_claim(api, pipeline_id):
    body = api.post(f"{URL}{pipeline_id}/validate/", {"check_live": False}, format="json").json()
    assert body["delivery"] is None and body["warnings"] == []


def test_a_table_clearflow_creates_is_exactly_once(api, kafka_conn, ch_conn, topics, clickhouse_target):
    spec = orders_spec(topics.orders, clickhouse_target.database, create_table=True)
    spec["sink"]["table"] = f"new_{uuid.uuid4().hex[:8]}"
    body = {"kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec, "check_live": True}
    response = answered(api, api.post(f"{URL}validate/", body, format="json"))
    assert response.status_code == 200, response.json()
    assert response.json()["delivery"]["guarantee"] == "exactly-once"
    assert re.search(r"will be created with non_replicated_deduplication_window", response.json()["delivery"]["reason"])


def test_someone_elses_pipeline_cannot_be_altered(
    other_api, pipeline_id, clickhouse_server, clickhouse_target, bare_table
):
    assert other_api.post(f"{URL}{pipeline_id}/table-dedup/").status_code == 404
    assert "non_replicated_deduplication_window" not in engine_full(
        clickhouse_server, clickhouse_target.database, bare_table
    )
