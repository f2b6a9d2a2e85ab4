"""A Kerberos (GSSAPI) connection through the REST API, against the real KDC (tests.kerberos_kdc) and the broker's
GSSAPI listener (tests.kafka_security): the connection test, the topic list, a sample, the join step's span sample
(its service) and the key advice read the events written through the PLAINTEXT listener; a principal the keytab
lacks, another principal's keytab and an unreachable KDC fail the test in words naming the KDC step, without the
keytab in the answer."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import datetime

import pytest

from clearflow_spec.connections import KafkaConnectionSpec
from localstack.processes import free_port
from tests.kafka_security import BrokerSecurity
from tests.kerberos_kdc import CLIENT_PRINCIPAL
from tests.webapp.conftest import order, produce_records
from tests.webapp.heavy import answered
from webapp.connections.kafka_span import sample_span

KAFKA = "/api/v1/connections/kafka/"
ORDERS = 12
RESENT = 3  # orders 0, 1 and 2 written twice


@pytest.fixture(scope="module")
def kerberos_topic(kafka_bootstrap: str, secured_kafka: BrokerSecurity) -> str:
    """12 JSON orders (seq 0..11) and a second copy of the first three, over 2 partitions."""
    name = f"kerberos_orders_{uuid.uuid4().hex[:8]}"
    values = [json.dumps(order(i)).encode() for i in [*range(ORDERS), *range(RESENT)]]
    produce_records(kafka_bootstrap, name, values, partitions=2)
    return name


def test_a_kerberos_connection_tests_lists_samples_and_advises_a_key(api, secured_kafka, kerberos_topic):
    connection = secured_kafka.connection("gssapi")
    created = api.post(KAFKA, {"name": "kerberos", **connection}, format="json")
    assert created.status_code == 201, created.json()
    pk = created.json()["id"]

    tested = api.post(f"{KAFKA}{pk}/test/")
    assert tested.status_code == 200, tested.json()
    assert tested.json()["brokers"] == [connection["bootstrap_servers"]]

    listed = {t["name"]: t for t in api.get(f"{KAFKA}{pk}/topics/").json()}
    assert listed[kerberos_topic] == {"name": kerberos_topic, "partitions": 2, "message_count": ORDERS + RESENT}

    sample = answered(api, api.post(f"{KAFKA}{pk}/sample/", {"topics": [kerberos_topic], "count": 20}, format="json"))
    assert sample.status_code == 200, sample.json()
    assert sorted(e["value"]["seq"] for e in sample.json()) == sorted([*range(ORDERS), *range(RESENT)])

    # The join step's sample of a time span: the second to the fourth event written.
    stamps = sorted(datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")) for e in sample.json())
    start_ms, end_ms = (int(stamps[i].timestamp() * 1000) for i in (1, 3))
    span = sample_span(
        KafkaConnectionSpec.model_validate(connection), topics=[kerberos_topic], **_span(start_ms, end_ms)
    )
    assert [int(e.timestamp.timestamp() * 1000) for e in span] == [int(t.timestamp() * 1000) for t in stamps[1:4]]

    advice = answered(
        api, api.post(f"{KAFKA}{pk}/dedup-analysis/", {"topics": [kerberos_topic], "keys": ["order_id"]}, "json")
    )
    assert advice.status_code == 200, advice.json()
    assert (advice.json()["scanned"], advice.json()["duplicates"]) == (ORDERS + RESENT, RESENT)


def _span(start_ms: int, end_ms: int) -> dict:
    return {"start_ms": start_ms, "end_ms": end_ms, "count": 20}


def _failed_test(api, connection: dict) -> str:
    response = api.post(f"{KAFKA}test/", {"name": "tmp", **connection}, format="json")
    assert response.status_code == 502, response.json()
    assert connection["sasl_kerberos_keytab"] not in response.content.decode()
    return response.json()["message"]


def test_a_principal_the_keytab_lacks_names_the_kdc_step(api, secured_kafka):
    connection = {**secured_kafka.connection("gssapi"), "sasl_kerberos_principal": "someone-else@CLEARFLOW.TEST"}
    message = _failed_test(api, connection)
    assert message.startswith(
        "Kerberos (KDC) step failed: no ticket for principal someone-else@CLEARFLOW.TEST from "
        f"{connection['sasl_kerberos_kdc']}: the keytab holds no key for this principal"
    ), message


def test_another_principals_keytab_names_the_kdc_step(api, secured_kafka):
    broker_keytab = base64.b64encode(secured_kafka.kerberos.broker_keytab.read_bytes()).decode()
    message = _failed_test(api, {**secured_kafka.connection("gssapi"), "sasl_kerberos_keytab": broker_keytab})
    assert message.startswith(
        f"Kerberos (KDC) step failed: no ticket for principal {CLIENT_PRINCIPAL} from "
        f"{secured_kafka.kerberos.kdc}: the keytab holds no key for this principal"
    ), message


def test_an_unreachable_kdc_names_the_kdc_step(api, secured_kafka):
    connection = {**secured_kafka.connection("gssapi"), "sasl_kerberos_kdc": f"127.0.0.1:{free_port()}"}
    message = _failed_test(api, connection)
    assert message.startswith(
        f"Kerberos (KDC) step failed: no ticket for principal {CLIENT_PRINCIPAL} from "
        f"{connection['sasl_kerberos_kdc']}: the KDC did not answer"
    ), message
