"""Secured Kafka connections over the REST API, against the real broker's SASL, TLS and mutual-TLS listeners.

For each mode a saved connection tests, lists topics and samples; the usual mistakes (a wrong password, a CA
that did not sign the broker's certificate, no client certificate for mutual TLS) answer 502 with a message
in plain words, without waiting for the whole client timeout.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.kafka_security import MODES, BrokerSecurity
from tests.webapp.conftest import order, produce_records
from tests.webapp.heavy import answered

KAFKA = "/api/v1/connections/kafka/"
SECURED_ORDERS = 12
# Bounds a hang, not a speed: the client's own timeout is 5 s; definite failures end after about 1 s.
ANSWER_WITHIN = 10


@pytest.fixture(scope="session")
def secured_topic(kafka_bootstrap: str, secured_kafka: BrokerSecurity) -> str:
    """12 JSON orders (seq 0..11) over 2 partitions, written through the broker's PLAINTEXT listener."""
    name = f"secured_orders_{uuid.uuid4().hex[:8]}"
    produce_records(kafka_bootstrap, name, [json.dumps(order(i)).encode() for i in range(SECURED_ORDERS)], partitions=2)
    return name


@pytest.mark.parametrize("mode", MODES)
def test_each_security_mode_tests_lists_and_samples(api, secured_kafka, secured_topic, mode):
    connection = secured_kafka.connection(mode)
    created = api.post(KAFKA, {"name": f"secured {mode}", **connection}, format="json")
    assert created.status_code == 201, created.json()
    pk = created.json()["id"]
    for secret in ("sasl_password", "ssl_key_pem"):
        if connection.get(secret):
            assert connection[secret] not in created.content.decode()

    tested = api.post(f"{KAFKA}{pk}/test/")
    assert tested.status_code == 200, tested.json()
    assert tested.json()["brokers"] == [connection["bootstrap_servers"]]

    listed = {t["name"]: t for t in api.get(f"{KAFKA}{pk}/topics/").json()}
    assert listed[secured_topic] == {"name": secured_topic, "partitions": 2, "message_count": SECURED_ORDERS}

    sample = answered(api, api.post(f"{KAFKA}{pk}/sample/", {"topics": [secured_topic], "count": 3}, format="json"))
    assert sample.status_code == 200, sample.json()
    assert [e["value"]["seq"] for e in sample.json()] == [9, 10, 11]


def _failed_test(api, connection: dict) -> str:
    started = time.monotonic()
    response = api.post(f"{KAFKA}test/", {"name": "tmp", **connection}, format="json")
    assert time.monotonic() - started < ANSWER_WITHIN
    assert response.status_code == 502, response.json()
    return response.json()["message"]


@pytest.mark.parametrize("mode", ["sasl_plain", "scram_sha_256", "scram_sha_512"])
def test_a_wrong_password_is_named(api, secured_kafka, mode):
    message = _failed_test(api, {**secured_kafka.connection(mode), "sasl_password": "not-the-password"})
    mechanism = secured_kafka.connection(mode)["sasl_mechanism"]
    assert message.startswith(
        f"SASL authentication failed: The broker rejected the user name or password ({mechanism})."
    )
    assert "not-the-password" not in message


def test_an_unknown_ca_is_named(api, secured_kafka):
    message = _failed_test(
        api, {**secured_kafka.connection("ssl"), "ssl_ca_pem": secured_kafka.unknown_ca.certificate_pem}
    )
    assert message.startswith(
        "TLS handshake failed (certificate): "
        f"The broker's TLS certificate at {secured_kafka.address('ssl')} is not signed by the CA certificate given"
    )


def test_a_missing_client_certificate_is_named(api, secured_kafka):
    connection = {**secured_kafka.connection("mtls"), "ssl_certificate_pem": "", "ssl_key_pem": ""}
    message = _failed_test(api, connection)
    assert message.startswith("TLS handshake failed (client certificate): ")
    assert "requires a client certificate signed by a CA it trusts (mutual TLS)" in message


def test_an_unknown_host_is_not_called_a_credentials_problem(api, secured_kafka):
    connection = {**secured_kafka.connection("sasl_plain"), "bootstrap_servers": "no-such-broker.invalid:9092"}
    message = _failed_test(api, connection)
    assert message.startswith(
        "DNS lookup failed: The broker host name in no-such-broker.invalid:9092 could not be resolved"
    )
    assert "password" not in message


def test_a_saved_connection_with_a_wrong_password_fails_sampling_in_plain_words(api, secured_kafka, secured_topic):
    connection = {**secured_kafka.connection("scram_sha_512"), "sasl_password": "stale"}
    pk = api.post(KAFKA, {"name": "stale", **connection}, format="json").json()["id"]
    for response in (
        api.get(f"{KAFKA}{pk}/topics/"),
        answered(api, api.post(f"{KAFKA}{pk}/sample/", {"topics": [secured_topic]}, format="json")),
    ):
        assert response.status_code == 502
        assert response.json()["message"].startswith(
            "SASL authentication failed: The broker rejected the user name or password (SCRAM-SHA-512)."
        )


def test_scram_over_tls_with_a_private_ca_and_msk_iam_refused_in_words(api, secured_kafka, secured_topic):
    """SASL_SSL (SCRAM-SHA-512 over TLS, the broker's certificate from a private CA) tests and samples; the same
    listener refuses an AWS_MSK_IAM connection (its signed token, from static keys, sent as OAUTHBEARER), and the
    test says at which step and why."""
    connection = secured_kafka.connection("sasl_ssl_scram")
    created = api.post(KAFKA, {"name": "scram over tls", **connection}, format="json")
    assert created.status_code == 201, created.json()
    pk = created.json()["id"]
    assert api.post(f"{KAFKA}{pk}/test/").status_code == 200
    sample = answered(api, api.post(f"{KAFKA}{pk}/sample/", {"topics": [secured_topic], "count": 2}, format="json"))
    assert [e["value"]["seq"] for e in sample.json()] == [10, 11]

    iam = {
        "bootstrap_servers": connection["bootstrap_servers"],
        "security_protocol": "SASL_SSL",
        "ssl_ca_pem": connection["ssl_ca_pem"],
        "sasl_mechanism": "AWS_MSK_IAM",
        "aws_region": "eu-west-1",
        "aws_access_key_id": "AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    }
    message = _failed_test(api, iam)
    assert message.startswith("SASL authentication failed: "), message
    assert "does not accept SASL AWS_MSK_IAM" in message, message
    assert iam["aws_secret_access_key"] not in message
