"""POST /api/v1/connections/kafka/{id}/dedup-analysis/: the answer's shape, owner-only, errors as JSON."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.webapp.conftest import produce_records
from tests.webapp.heavy import answered
from webapp.connections.services import kafka_connection_create

pytestmark = pytest.mark.django_db

KAFKA = "/api/v1/connections/kafka/"


@pytest.fixture(scope="module")
def resent_topic(kafka_bootstrap) -> str:
    """100 events one second apart; the first 10 sent again (as records 100..109, 100 s later)."""
    topic = f"resent_{uuid.uuid4().hex[:8]}"
    values = [json.dumps({"event_id": f"e{i}", "n": i}).encode() for i in range(100)]
    values += values[:10]
    produce_records(kafka_bootstrap, topic, values, partitions=1)
    return topic


def url(connection) -> str:
    return f"{KAFKA}{connection.pk}/dedup-analysis/"


def test_answers_the_issue_shape(api, kafka_conn, resent_topic):
    response = answered(api, api.post(url(kafka_conn), {"topics": [resent_topic], "keys": ["event_id"]}, format="json"))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert {
        "scanned",
        "distinct_keys",
        "duplicates",
        "duplicate_share",
        "missing_keys",
        "delay_ms",
        "recommended_window",
        "estimated_state_keys",
        "estimated_state_bytes",
        "candidates",
    } <= set(body)
    # Deprecated, kept for clients of earlier versions: the dedup state is always in RocksDB.
    assert body["state_store"] == "rocksdb"
    assert body["scanned"] == 110 and body["distinct_keys"] == 100 and body["duplicates"] == 10
    assert body["duplicate_share"] == pytest.approx(10 / 110, abs=0.001)
    assert body["delay_ms"]["p50"] == body["delay_ms"]["max"] == 100_000  # record i+100 repeats record i
    assert body["recommended_window"] == "5m"
    assert body["window_is_lower_bound"]  # 109 s of events cannot show 5 minutes
    assert [c["field"] for c in body["candidates"]] == ["event_id", "n"]
    assert body["complete"] is True


def test_max_events_and_event_time(api, kafka_conn, resent_topic):
    response = answered(
        api,
        api.post(
            url(kafka_conn),
            {"topics": [resent_topic], "keys": ["event_id"], "max_events": 20, "time": "ingestion"},
            format="json",
        ),
    )
    assert response.json()["scanned"] == 20
    response = answered(
        api,
        api.post(
            url(kafka_conn),
            {"topics": [resent_topic], "keys": ["event_id"], "time": "event", "event_time_field": "n"},
            format="json",
        ),
    )
    assert response.status_code == 200
    assert response.json()["delay_ms"]["max"] == 0  # a copy carries its original's event time


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "topics"),
        ({"topics": []}, "topics"),
        ({"topics": ["t"], "max_events": 0}, "max_events"),
        ({"topics": ["t"], "max_events": 10**9}, "max_events"),
        ({"topics": ["t"], "time": "processing"}, "time"),
        ({"topics": ["t"], "time": "event"}, "event_time_field"),
        ({"topics": ["t"], "keys": ["bad key"]}, "keys[0]"),
        ({"topics": ["t"], "keys": "event_id"}, "keys"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, kafka_conn, body, path):
    response = answered(api, api.post(url(kafka_conn), body, format="json"))
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert response.json()["errors"][0]["path"] == path


def test_unknown_topic_is_404(api, kafka_conn):
    response = answered(api, api.post(url(kafka_conn), {"topics": ["no-such-topic"], "keys": ["id"]}, format="json"))
    assert response.status_code == 404
    assert "no-such-topic" in response.json()["message"]


def test_unreachable_broker_is_502(api, owner):
    dead = kafka_connection_create(owner=owner, data={"name": "dead", "bootstrap_servers": "127.0.0.1:1"})
    response = answered(api, api.post(url(dead), {"topics": ["t"], "keys": ["id"]}, format="json"))
    assert response.status_code == 502
    assert response.json()["code"] == "kafka_error"


def test_someone_elses_connection_is_404(other_api, anon_api, kafka_conn, resent_topic):
    body = {"topics": [resent_topic], "keys": ["event_id"]}
    assert answered(other_api, other_api.post(url(kafka_conn), body, format="json")).status_code == 404
    assert anon_api.post(url(kafka_conn), body, format="json").status_code == 401


def test_listed_in_the_openapi_schema(client):
    schema = client.get("/api/v1/schema/?format=json").json()
    operation = schema["paths"]["/api/v1/connections/kafka/{id}/dedup-analysis/"]["post"]
    assert operation["operationId"] == "kafka_dedup_analysis"
