"""Whatever a client sends, the answer is never a 500: odd shapes, NUL bytes, huge numbers, bad PEM."""

from __future__ import annotations

import pytest

from tests.webapp.conftest import orders_spec
from tests.webapp.heavy import answered

KAFKA = "/api/v1/connections/kafka/"
BAD_PEM = "-----BEGIN CERTIFICATE-----\nxx\n-----END CERTIFICATE-----"


@pytest.mark.parametrize(
    "payload",
    [
        [1, 2],
        "text",
        None,
        {"name": "x\x00y", "bootstrap_servers": "b:1"},
        {"name": "x", "bootstrap_servers": "b:1", "sasl_password": "a\x00b"},
        {"name": "x" * 1000, "bootstrap_servers": "b:1"},
        {"name": "x", "bootstrap_servers": "b:" + "9" * 30},
        {"name": "x", "bootstrap_servers": "b:1", "security_protocol": "SSL", "ssl_ca_pem": "-----BEGIN garbage"},
    ],
)
def test_odd_connection_input_is_a_400(api, payload):
    response = api.post(KAFKA, payload, format="json")
    assert response.status_code == 400, response.content


def test_unusable_certificate_is_a_400_on_its_field(api):
    response = api.post(
        f"{KAFKA}test/",
        {"name": "x", "bootstrap_servers": "127.0.0.1:1", "security_protocol": "SSL", "ssl_ca_pem": BAD_PEM},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "ssl_ca_pem"
    assert "PEM" in response.json()["errors"][0]["message"]


@pytest.mark.parametrize(
    "change",
    [
        {"kafka_connection": 10**30},
        {"clickhouse_connection": -1},
        {"name": None},
        {"note": "x" * 1000},
        {"spec.filter": "seq = '\x00'"},
        {"spec.source": None},
        {"spec.source": {"topics": "x"}},
        {"spec.sink": {"clickhouse": "x"}},
        {"spec.sink": {"clickhouse": {"database": 5}}},
        {"spec.transforms": [{"name": "t", "expression": "seq +", "type": "int"}]},
    ],
)
def test_odd_pipeline_input_is_a_400(api, kafka_conn, ch_conn, topics, clickhouse_target, change):
    body = {
        "name": "p",
        "kafka_connection": kafka_conn.pk,
        "clickhouse_connection": ch_conn.pk,
        "spec": orders_spec(topics.orders, clickhouse_target.database),
    }
    for key, value in change.items():
        if key.startswith("spec."):
            body["spec"][key.removeprefix("spec.")] = value
        else:
            body[key] = value
    assert api.post("/api/v1/pipelines/", body, format="json").status_code == 400
    if any(key.startswith("spec.") for key in change):
        response = api.post("/api/v1/pipelines/validate/", {**body, "check_live": True}, format="json")
        assert response.status_code == 400


def test_huge_ids_are_404(api):
    assert api.get(f"/api/v1/pipelines/{10**30}/").status_code == 404
    assert api.get(f"{KAFKA}{10**25}/topics/").status_code == 404


@pytest.mark.parametrize("topic", ["", "a" * 300, "bad topic", "x\x00"])
def test_odd_topic_names(api, kafka_conn, topic):
    response = answered(api, api.post(f"{KAFKA}{kafka_conn.pk}/sample/", {"topics": [topic]}, format="json"))
    assert response.status_code in (400, 404), response.content


@pytest.mark.parametrize("database", ["a%20b", "%60x%60", "x'y", "%C3%BC"])
def test_odd_database_names(api, ch_conn, database):
    response = api.get(f"/api/v1/connections/clickhouse/{ch_conn.pk}/databases/{database}/tables/")
    assert response.status_code == 404, response.content
