"""A pipeline end to end over each secured Kafka listener: SASL PLAIN, SCRAM-SHA-256/512, TLS, mutual TLS.

The job's spec is built the way the worker builds it (`pipeline_job_spec` on a pipeline whose saved connection
holds the credentials or certificates), and the engine runs as its own process (`python -m spark_jobs.run
--available-now`), reading the broker through the secured listener and writing ClickHouse. Only the spec
contract is used, so this holds whichever Kafka reader the engine has.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from engine_helpers import JOB_TIMEOUT, event, job_command, produce

from clearflow_spec.spec import PipelineSpec
from tests.kafka_security import MODES
from tests.specs import spec_dict
from tests.webapp.heavy import answered
from worker.jobs import write_spec

pytestmark = [pytest.mark.spark, pytest.mark.django_db]

UNIQUE = 40
DUPLICATES = 10


def _stored_spec(topic: str, table: str) -> dict:
    """A spec as the API stores it: no addresses or secrets (the saved connections fill them in)."""
    return spec_dict(
        topics=[topic],
        starting_offsets="earliest",
        fields=[("event_id", "string"), ("n", "int")],
        dedup={"keys": ["event_id"], "window": "1h", "time": "ingestion"},
        database="default",
        table=table,
        create_table=True,
        engine="MergeTree",
        columns=[("event_id", "event_id", "String"), ("n", "n", "Nullable(Int64)")],
    )


def _run_job(job_spec: PipelineSpec, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # The job reads its secrets from this file (written as the worker writes it), never from its command line.
    spec_file = write_spec(tmp_path, job_spec)
    return subprocess.run(
        job_command(spec_file, tmp_path / "checkpoint", "--driver-memory", "1g", "--available-now"),
        cwd="/",
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_pipeline_reads_through_the_secured_listener(
    mode, django_user_model, secured_kafka, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
    from webapp.pipelines.services import pipeline_create, pipeline_job_spec

    owner = django_user_model.objects.create_user("owner", password="owner-pass-123")
    connection = secured_kafka.connection(mode)
    kafka = kafka_connection_create(owner=owner, data={"name": f"secured {mode}", **connection})
    warehouse = clickhouse_connection_create(
        owner=owner, data={"name": "warehouse", "host": clickhouse_server.host, "port": clickhouse_server.port}
    )
    topic = new_topic(2)
    keys = [f"{mode}-{i:03d}" for i in range(UNIQUE)]
    records = [(i % 2, event(key, n=i)) for i, key in enumerate(keys)]
    records += [((i + 1) % 2, event(keys[i], n=-i)) for i in range(DUPLICATES)]
    produce(kafka_bootstrap, topic, records)  # through the PLAINTEXT listener; the job reads the secured one
    table = f"secured_{mode}_{uuid.uuid4().hex[:8]}"
    pipeline = pipeline_create(
        owner=owner,
        name=f"secured-{mode}",
        kafka_connection=kafka,
        clickhouse_connection=warehouse,
        spec=_stored_spec(topic, table),
    )

    job_spec = pipeline_job_spec(pipeline=pipeline)
    assert job_spec.source.kafka.bootstrap_servers == connection["bootstrap_servers"]
    assert job_spec.source.kafka.security_protocol == connection["security_protocol"]
    finished = _run_job(job_spec, tmp_path)

    assert finished.returncode == 0, (finished.stdout + finished.stderr)[-4000:]
    for secret in (connection.get("sasl_password"), connection.get("ssl_key_pem")):
        if secret:
            assert secret not in finished.stdout + finished.stderr
    assert ch.query(f"SELECT count(), uniqExact(event_id) FROM default.`{table}`").result_rows == [(UNIQUE, UNIQUE)]
    assert ch.command(f"SELECT count() FROM default.`{table}_dlq`") == 0


def test_a_pipeline_writes_to_clickhouse_over_https_with_a_private_ca(
    django_user_model, kafka_bootstrap, clickhouse_tls, ch, new_topic, tmp_path
):
    """The ClickHouse connection that passed "Test connection" with a private CA is what the job writes through."""
    from webapp.connections.services import (
        clickhouse_connection_create,
        clickhouse_connection_test,
        kafka_connection_create,
    )
    from webapp.pipelines.services import pipeline_create, pipeline_job_spec

    owner = django_user_model.objects.create_user("owner", password="owner-pass-123")
    kafka = kafka_connection_create(owner=owner, data={"name": "events", "bootstrap_servers": kafka_bootstrap})
    warehouse = clickhouse_connection_create(
        owner=owner,
        data={
            "name": "warehouse over https",
            "host": clickhouse_tls.host,
            "port": clickhouse_tls.port,
            "secure": True,
            "ssl_ca_pem": clickhouse_tls.ca_pem,
        },
    )
    assert clickhouse_connection_test(connection=warehouse).version
    topic = new_topic(2)
    keys = [f"tls-{i:03d}" for i in range(UNIQUE)]
    records = [(i % 2, event(key, n=i)) for i, key in enumerate(keys)]
    records += [((i + 1) % 2, event(keys[i], n=-i)) for i in range(DUPLICATES)]
    produce(kafka_bootstrap, topic, records)
    table = f"https_{uuid.uuid4().hex[:8]}"
    pipeline = pipeline_create(
        owner=owner,
        name="https-sink",
        kafka_connection=kafka,
        clickhouse_connection=warehouse,
        spec=_stored_spec(topic, table),
    )

    finished = _run_job(pipeline_job_spec(pipeline=pipeline), tmp_path)

    assert finished.returncode == 0, (finished.stdout + finished.stderr)[-4000:]
    # Read back over plain HTTP from the server behind the proxy: the rows arrived through HTTPS.
    assert ch.query(f"SELECT count(), uniqExact(event_id) FROM default.`{table}`").result_rows == [(UNIQUE, UNIQUE)]


def test_kerberos_gssapi_connection_is_tested_in_words_and_a_pipeline_reads_exact_rows(
    django_user_model, secured_kafka, kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    """GSSAPI against a real KDC (tests.kerberos_kdc): the connection saved over the API keeps its keytab
    secret; the web app's connection test passes and its sample reads the events (more of the web app's reads over
    Kerberos: tests/webapp/connections/test_kafka_gssapi.py); the job, given
    the keytab only through its spec file, reads the topic over Kerberos into ClickHouse, every row once."""
    from tests.webapp.conftest import token_client
    from webapp.connections.models import KafkaConnection
    from webapp.pipelines.services import pipeline_create, pipeline_job_spec

    api = token_client(django_user_model.objects.create_user("owner", password="owner-pass-123"))
    connection = secured_kafka.connection("gssapi")
    created = api.post("/api/v1/connections/kafka/", {"name": "kerberos", **connection}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["has_sasl_kerberos_keytab"] is True
    assert connection["sasl_kerberos_keytab"] not in created.content.decode()
    saved = KafkaConnection.objects.get(pk=created.json()["id"])
    tested = api.post(f"/api/v1/connections/kafka/{saved.pk}/test/")
    assert tested.status_code == 200, tested.json()
    topic = new_topic(2)

    warehouse = api.post(
        "/api/v1/connections/clickhouse/",
        {"name": "warehouse", "host": clickhouse_server.host, "port": clickhouse_server.port},
        format="json",
    )
    keys = [f"krb-{i:03d}" for i in range(UNIQUE)]
    records = [(i % 2, event(key, n=i)) for i, key in enumerate(keys)]
    records += [((i + 1) % 2, event(keys[i], n=-i)) for i in range(DUPLICATES)]
    produce(kafka_bootstrap, topic, records)  # through the PLAINTEXT listener; the job reads the GSSAPI one
    sample = {"topics": [topic], "count": len(records)}
    sampled = answered(api, api.post(f"/api/v1/connections/kafka/{saved.pk}/sample/", sample, "json"))
    assert sampled.status_code == 200, sampled.json()
    assert sorted(e["value"]["event_id"] for e in sampled.json()) == sorted(value["event_id"] for _, value in records)
    table = f"kerberos_{uuid.uuid4().hex[:8]}"
    pipeline = pipeline_create(
        owner=saved.owner,
        name="kerberos",
        kafka_connection=saved,
        clickhouse_connection=saved.workspace.clickhouse_connections.get(pk=warehouse.json()["id"]),
        spec=_stored_spec(topic, table),
    )
    finished = _run_job(pipeline_job_spec(pipeline=pipeline), tmp_path)

    assert finished.returncode == 0, (finished.stdout + finished.stderr)[-4000:]
    assert connection["sasl_kerberos_keytab"] not in finished.stdout + finished.stderr
    assert ch.query(f"SELECT count(), uniqExact(event_id) FROM default.`{table}`").result_rows == [(UNIQUE, UNIQUE)]
