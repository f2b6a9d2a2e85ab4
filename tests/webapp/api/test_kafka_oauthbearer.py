"""OAUTHBEARER for real: a broker whose listener checks tokens with Kafka's own OAuthBearerValidatorCallbackHandler
against the JWKS of a real OpenID Connect provider (Keycloak, localstack.keycloak), and the web app's client
(librdkafka's OIDC mode) fetching tokens from that provider with the client-credentials grant.

The broker starts for this module only (the session's broker starts before any provider would); Keycloak is the
session's (`keycloak`, tests/webapp/conftest.py), shared with the single sign-on tests.
"""

from __future__ import annotations

import json
import uuid

import pytest

from localstack import processes, service_defs
from localstack.kafka_listener import KafkaListener
from tests.webapp.conftest import order, produce_records
from tests.webapp.heavy import answered

KAFKA = "/api/v1/connections/kafka/"
ORDERS = 6


@pytest.fixture(scope="module")
def oauth_kafka(tmp_path_factory, keycloak):
    """(keycloak, PLAINTEXT bootstrap, OAUTHBEARER bootstrap) of a broker that trusts Keycloak's tokens."""
    with processes.ProcessGroup(tmp_path_factory.mktemp("oauth-kafka-logs")) as group:
        port, oauth_port = processes.free_port(), processes.free_port()
        listener = KafkaListener(
            name="SASL_OAUTH",
            port=oauth_port,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanisms=("OAUTHBEARER",),
            oauth_jwks_url=keycloak.jwks_url,
            oauth_issuer=keycloak.issuer,
        )
        group.start(
            service_defs.kafka_broker(
                port=port,
                data_dir=tmp_path_factory.mktemp("oauth-kafka"),
                listeners=[listener],
                java_properties={"org.apache.kafka.sasl.oauthbearer.allowed.urls": keycloak.jwks_url},
            )
        )
        yield keycloak, f"127.0.0.1:{port}", f"127.0.0.1:{oauth_port}"


def oauth_connection(keycloak, bootstrap: str, name: str) -> dict:
    """A Kafka connection that gets its tokens from Keycloak's token endpoint (client credentials)."""
    return {
        "name": name,
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauthbearer_token_endpoint_url": keycloak.token_url,
        "sasl_oauthbearer_client_id": keycloak.machine_client.client_id,
        "sasl_oauthbearer_client_secret": keycloak.machine_client.client_secret,
    }


def test_oauthbearer_tests_and_samples_and_a_wrong_client_secret_is_named(api, oauth_kafka):
    keycloak, plaintext, bootstrap = oauth_kafka
    topic = f"oauth_orders_{uuid.uuid4().hex[:8]}"
    produce_records(plaintext, topic, [json.dumps(order(i)).encode() for i in range(ORDERS)])
    connection = {
        **oauth_connection(keycloak, bootstrap, "oauth"),
        "sasl_oauthbearer_extensions": "logicalCluster=lkc-test",
    }
    created = api.post(KAFKA, connection, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["has_sasl_oauthbearer_client_secret"] is True
    assert keycloak.machine_client.client_secret not in created.content.decode()
    pk = created.json()["id"]
    tested = api.post(f"{KAFKA}{pk}/test/")
    assert tested.status_code == 200, tested.json()
    sample = answered(api, api.post(f"{KAFKA}{pk}/sample/", {"topics": [topic], "count": 2}, format="json"))
    assert sample.status_code == 200, sample.json()
    assert [e["value"]["seq"] for e in sample.json()] == [4, 5]

    wrong = {**connection, "name": "wrong", "sasl_oauthbearer_client_secret": "not-the-secret"}
    refused = api.post(f"{KAFKA}test/", wrong, format="json")
    assert refused.status_code == 502, refused.json()
    message = refused.json()["message"]
    assert message.startswith("Token endpoint failed: The OAuth token endpoint gave no token"), message
    assert "not-the-secret" not in message


@pytest.mark.spark
def test_a_pipeline_reads_over_oauthbearer_with_tokens_from_the_provider_every_row_once(
    api, oauth_kafka, clickhouse_server, tmp_path
):
    """The job's own client (kafka-clients' OAuthBearerLoginCallbackHandler) fetches its tokens from Keycloak and
    reads the OAUTHBEARER listener: every event once in ClickHouse, the client secret only in the spec file."""
    import subprocess

    import clickhouse_connect

    from tests.spark_jobs.engine_helpers import JOB_TIMEOUT, job_command
    from tests.specs import spec_dict
    from webapp.connections.models import KafkaConnection
    from webapp.pipelines.services import pipeline_create, pipeline_job_spec
    from worker.jobs import write_spec

    keycloak, plaintext, bootstrap = oauth_kafka
    topic, table = f"oauth_job_{uuid.uuid4().hex[:8]}", f"oauth_{uuid.uuid4().hex[:8]}"
    unique = [order(i) for i in range(ORDERS)]
    produce_records(plaintext, topic, [json.dumps(o).encode() for o in unique + unique[:2]])  # two re-sent
    created = api.post(KAFKA, oauth_connection(keycloak, bootstrap, "oauth job"), format="json")
    assert created.status_code == 201, created.json()
    saved = KafkaConnection.objects.get(pk=created.json()["id"])
    warehouse = api.post(
        "/api/v1/connections/clickhouse/",
        {"name": "warehouse", "host": clickhouse_server.host, "port": clickhouse_server.port},
        format="json",
    )
    assert warehouse.status_code == 201, warehouse.json()
    spec = spec_dict(
        topics=[topic],
        starting_offsets="earliest",
        fields=[("order_id", "string"), ("seq", "int")],
        dedup={"keys": ["order_id"], "window": "1h", "time": "ingestion"},
        database="default",
        table=table,
        create_table=True,
        engine="MergeTree",
        columns=[("order_id", "order_id", "String"), ("seq", "seq", "Nullable(Int64)")],
    )
    pipeline = pipeline_create(
        owner=saved.owner,
        name="oauth-job",
        kafka_connection=saved,
        clickhouse_connection=saved.workspace.clickhouse_connections.get(pk=warehouse.json()["id"]),
        spec=spec,
    )
    spec_file = write_spec(tmp_path, pipeline_job_spec(pipeline=pipeline))
    finished = subprocess.run(
        job_command(spec_file, tmp_path / "checkpoint", "--driver-memory", "1g", "--available-now"),
        cwd="/",
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
    )

    assert finished.returncode == 0, (finished.stdout + finished.stderr)[-4000:]
    assert keycloak.machine_client.client_secret not in finished.stdout + finished.stderr
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    rows = client.query(f"SELECT count(), uniqExact(order_id) FROM default.`{table}`").result_rows
    assert rows == [(ORDERS, ORDERS)]
