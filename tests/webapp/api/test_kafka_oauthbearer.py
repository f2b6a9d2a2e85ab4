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


def test_oauthbearer_tests_and_samples_and_a_wrong_client_secret_is_named(api, oauth_kafka):
    keycloak, plaintext, bootstrap = oauth_kafka
    topic = f"oauth_orders_{uuid.uuid4().hex[:8]}"
    produce_records(plaintext, topic, [json.dumps(order(i)).encode() for i in range(ORDERS)])
    connection = {
        "name": "oauth",
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauthbearer_token_endpoint_url": keycloak.token_url,
        "sasl_oauthbearer_client_id": keycloak.machine_client.client_id,
        "sasl_oauthbearer_client_secret": keycloak.machine_client.client_secret,
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
