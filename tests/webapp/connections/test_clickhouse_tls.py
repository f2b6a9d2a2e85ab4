"""A ClickHouse behind HTTPS with a private CA (the test server behind a TLS proxy, `clickhouse_tls`), for real.

What a user checks: "Test connection" passes only with the CA (or with verification off), and the pipeline's
job gets the same TLS settings, so what passed the test is what the job can reach. The job's writer
(`spark_jobs.sink`, the code the executors run) then writes rows through HTTPS with that spec.
"""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

from spark_jobs import sink
from tests.webapp.conftest import orders_spec
from webapp.pipelines import services

CH = "/api/v1/connections/clickhouse/"
PIPELINES = "/api/v1/pipelines/"


@pytest.fixture
def tls_fields(clickhouse_tls):
    return {"host": clickhouse_tls.host, "port": clickhouse_tls.port, "secure": True}


def test_test_connection_trusts_the_private_ca_only_when_given(api, tls_fields, clickhouse_tls):
    without_ca = api.post(f"{CH}test/", {"name": "tls", **tls_fields}, format="json")
    assert without_ca.status_code == 502
    assert "HTTPS connection" in without_ca.json()["message"]
    assert "certificate" in without_ca.json()["message"].lower()

    unverified = api.post(f"{CH}test/", {"name": "tls", **tls_fields, "verify": False}, format="json")
    assert unverified.status_code == 200, unverified.json()

    created = api.post(CH, {"name": "tls", **tls_fields, "ssl_ca_pem": clickhouse_tls.ca_pem}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["secure"] is True and created.json()["verify"] is True
    tested = api.post(f"{CH}{created.json()['id']}/test/")
    assert tested.status_code == 200, tested.json()
    assert tested.json()["version"]


def test_the_job_gets_the_tls_settings_that_passed_the_test_and_writes_through_https(
    api, kafka_conn, tls_fields, clickhouse_tls, clickhouse_server, topics
):
    import clickhouse_connect

    connection = api.post(CH, {"name": "tls", **tls_fields, "ssl_ca_pem": clickhouse_tls.ca_pem}, format="json")
    assert api.post(f"{CH}{connection.json()['id']}/test/").status_code == 200
    database = f"tls_{uuid.uuid4().hex[:8]}"
    plain = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    plain.command(f"CREATE DATABASE `{database}`")
    body = {
        "name": "orders-over-https",
        "kafka_connection": kafka_conn.pk,
        "clickhouse_connection": connection.json()["id"],
        "spec": orders_spec(topics.orders, database, create_table=True),
    }
    created = api.post(PIPELINES, body, format="json")
    assert created.status_code == 201, created.json()

    # The stored spec (what the API shows) carries the TLS settings; the CA is not a secret.
    stored = api.get(f"{PIPELINES}{created.json()['id']}/").json()["spec"]["sink"]["clickhouse"]
    ca = clickhouse_tls.ca_pem.strip()  # as the API stores it (text fields are trimmed)
    assert (stored["secure"], stored["verify"], stored["ssl_ca_pem"]) == (True, True, ca)

    # The job's spec, as the worker writes it for the job.
    from webapp.pipelines.models import Pipeline

    spec = services.pipeline_job_spec(pipeline=Pipeline.objects.get(pk=created.json()["id"]))
    job = spec.to_dict(reveal_secrets=True)  # as the worker writes it for the job
    section = job["sink"]["clickhouse"]
    assert section["secure"] is True and section["verify"] is True
    assert section["ssl_ca_pem"] == ca
    assert (section["host"], section["port"]) == (clickhouse_tls.host, clickhouse_tls.port)
    assert section["database"] == database

    # The job's writer reaches the server through HTTPS with exactly that: create the tables, insert rows.
    conn = job["sink"]["clickhouse"]  # what the job hands its executors: the spec's section, secrets included
    table_spec = sink.TableSpec(
        database=database,
        table=spec.sink.table,
        dlq_table=spec.sink.dead_letter_table,
        engine=spec.sink.engine,
        order_by=tuple(spec.sink.order_by),
        columns=tuple((c.column, c.type) for c in spec.sink.columns),
        insert_dedup_window=spec.sink.insert_dedup_window,
    )
    sink.prepare_tables(conn, table_spec, create=True)
    order_ids = [str(uuid.uuid4()) for _ in range(3)]
    batch = pa.RecordBatch.from_pydict(
        {
            "order_id": pa.array(order_ids, pa.string()),
            "seq": pa.array([1, 2, 3], pa.int64()),
            "amount": pa.array([1.5, 2.5, 3.5], pa.float64()),
            "customer_name": pa.array(["a", None, "c"], pa.string()),
            "_cf_error": pa.nulls(3, pa.string()),
        }
    )
    writer = sink.PartitionWriter(
        conn=conn,
        database=database,
        table=spec.sink.table,
        dlq_table=spec.sink.dead_letter_table,
        columns=tuple((c.column, c.column) for c in spec.sink.columns),
        pipeline=spec.name,
        token_prefix=f"{spec.name}:tls",
        batch_id=0,
        partition_rows={0: 3},
    )
    [stats] = list(writer(iter([batch])))
    assert stats.column("rows_written")[0].as_py() == 3
    rows = plain.query(f"SELECT toString(order_id), seq FROM `{database}`.orders ORDER BY seq").result_rows
    assert rows == [(order_ids[0], 1), (order_ids[1], 2), (order_ids[2], 3)]
    plain.close()


def test_a_ca_certificate_needs_https(api, clickhouse_tls):
    response = api.post(
        CH,
        {"name": "x", "host": clickhouse_tls.host, "port": clickhouse_tls.port, "ssl_ca_pem": clickhouse_tls.ca_pem},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [{"path": "ssl_ca_pem", "message": "A CA certificate needs HTTPS."}]
