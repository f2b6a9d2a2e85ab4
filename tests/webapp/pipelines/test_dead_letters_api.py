"""A pipeline's dead letters over the API: browse, download, replay (back into Kafka), purge; owner only.

The rows are written by the engine's own sink (tests/webapp/pipelines/dead_letter_helpers.py) into the real
ClickHouse; replayed events are read back from the real broker.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.webapp.conftest import orders_spec, produce_records
from tests.webapp.pipelines.dead_letter_helpers import Event, new_database, write_dead_letters
from webapp.connections.kafka_client import sample_events
from webapp.pipelines import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic(kafka_bootstrap) -> str:
    name = f"dlq_src_{uuid.uuid4().hex[:8]}"
    produce_records(kafka_bootstrap, name, [], partitions=2)
    return name


@pytest.fixture
def database(clickhouse_server) -> str:
    return new_database(clickhouse_server)


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, topic, database):
    return services.pipeline_create(
        owner=owner,
        name=f"dlq-{uuid.uuid4().hex[:6]}",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topic, database, create_table=True),
    )


def base(pipeline) -> str:
    return f"/api/v1/pipelines/{pipeline.pk}/dead-letters/"


def malformed(topic: str, count: int, *, first_offset: int = 0) -> list[Event]:
    return [
        Event(topic, i % 2, first_offset + i, f'{{"order_id": "not-a-uuid-{i}"}}', "order_id: not a UUID")
        for i in range(count)
    ]


def test_browse_newest_first_a_page_at_a_time(api, pipeline, topic, database):
    write_dead_letters(pipeline, malformed(topic, 3))
    write_dead_letters(pipeline, [Event(topic, 1, 99, "not json", "invalid JSON")])  # a later batch
    first = api.get(base(pipeline), {"page_size": 2}).json()
    assert first["table"] == f"{database}.orders_dlq"
    assert first["table_exists"] is True
    assert (first["count"], first["pages"], first["page"]) == (4, 2, 1)
    newest = first["results"][0]
    assert (newest["topic"], newest["partition"], newest["offset"]) == (topic, 1, 99)
    assert newest["reason"] == "invalid JSON"
    assert newest["raw"] == "not json"
    assert newest["batch_id"] >= 0 and newest["inserted_at"]
    second = api.get(base(pipeline), {"page": 2, "page_size": 2}).json()
    # Within a batch: by topic and partition, the newest offset first.
    rest = first["results"][1:] + second["results"]
    assert [(r["partition"], r["offset"]) for r in rest] == [(0, 2), (0, 0), (1, 1)]
    assert api.get(base(pipeline), {"page_size": 0}).status_code == 400


def test_another_pipeline_sharing_the_table_keeps_its_own(api, pipeline, owner, kafka_conn, ch_conn, topic):
    neighbour = services.pipeline_create(
        owner=owner,
        name=f"{pipeline.name}-b",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=pipeline.spec,
    )
    write_dead_letters(pipeline, malformed(topic, 2))
    write_dead_letters(neighbour, malformed(topic, 5, first_offset=100))
    assert api.get(base(pipeline)).json()["count"] == 2
    assert api.post(f"{base(pipeline)}purge/", {"confirm": True}, format="json").json() == {"purged": 2}
    assert api.get(base(pipeline)).json()["count"] == 0
    assert api.get(base(neighbour)).json()["count"] == 5


def test_download_streams_every_dead_letter_as_json_lines(api, pipeline, topic):
    write_dead_letters(pipeline, malformed(topic, 3))
    response = api.get(f"{base(pipeline)}download/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"].startswith(f'attachment; filename="{pipeline.name}-dead-letters-')
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert sorted(line["offset"] for line in lines) == [0, 1, 2]
    assert {line["reason"] for line in lines} == {"order_id: not a UUID"}
    assert lines[0]["raw"].startswith('{"order_id": "not-a-uuid-')
    asked = api.get(f"{base(pipeline)}download/", HTTP_ACCEPT="application/x-ndjson")
    assert len(b"".join(asked.streaming_content).splitlines()) == 3


def test_replay_sends_the_raw_values_back_to_their_topic_and_removes_them(api, pipeline, topic, kafka_conn):
    events = malformed(topic, 4)
    write_dead_letters(pipeline, events)
    response = api.post(f"{base(pipeline)}replay/", {}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json() == {"replayed": 4, "failed": 0, "remaining": 0, "error": None}
    arrived = sample_events(kafka_conn.client_settings(), topics=[topic], count=50, position="oldest")
    assert sorted(json.dumps(e.value) for e in arrived) == sorted(e.raw for e in events)
    assert api.get(base(pipeline)).json()["count"] == 0
    # Nothing left: a second replay sends nothing again.
    assert api.post(f"{base(pipeline)}replay/", {}, format="json").json()["replayed"] == 0


def test_replay_in_steps_oldest_first(api, pipeline, topic, kafka_conn):
    write_dead_letters(pipeline, malformed(topic, 2))
    write_dead_letters(pipeline, malformed(topic, 2, first_offset=10))
    assert api.post(f"{base(pipeline)}replay/", {"limit": 2}, format="json").json()["remaining"] == 2
    assert sorted(r["offset"] for r in api.get(base(pipeline)).json()["results"]) == [10, 11]


def test_replay_with_the_broker_down_keeps_the_dead_letters(api, pipeline, topic, kafka_conn):
    from localstack.processes import free_port

    write_dead_letters(pipeline, malformed(topic, 2))
    kafka_conn.bootstrap_servers = f"127.0.0.1:{free_port()}"
    kafka_conn.save()
    response = api.post(f"{base(pipeline)}replay/", {}, format="json")
    assert response.status_code == 502
    assert "connection refused" in response.json()["message"]
    assert api.get(base(pipeline)).json()["count"] == 2


def test_purge_needs_confirmation(api, pipeline, topic):
    write_dead_letters(pipeline, malformed(topic, 3))
    response = api.post(f"{base(pipeline)}purge/", {}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "confirm"
    assert api.post(f"{base(pipeline)}purge/", {"confirm": False}, format="json").status_code == 400
    assert api.get(base(pipeline)).json()["count"] == 3
    assert api.post(f"{base(pipeline)}purge/", {"confirm": True}, format="json").json() == {"purged": 3}
    assert api.get(base(pipeline)).json()["count"] == 0


def test_before_the_job_ever_ran_there_is_no_table_and_nothing_to_do(api, owner, kafka_conn, ch_conn, topic):
    pipeline = services.pipeline_create(
        owner=owner,
        name="never-ran",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topic, f"no_such_db_{uuid.uuid4().hex[:6]}"),
    )
    page = api.get(base(pipeline)).json()
    assert (page["table_exists"], page["count"], page["results"]) == (False, 0, [])
    assert b"".join(api.get(f"{base(pipeline)}download/").streaming_content) == b""
    assert api.post(f"{base(pipeline)}replay/", {}, format="json").json()["replayed"] == 0
    assert api.post(f"{base(pipeline)}purge/", {"confirm": True}, format="json").json() == {"purged": 0}


def test_an_outsider_gets_404_on_every_endpoint_and_nothing_changes(other_api, api, pipeline, topic):
    write_dead_letters(pipeline, malformed(topic, 2))
    for method, path in [
        ("get", ""),
        ("get", "download/"),
        ("post", "replay/"),
        ("post", "purge/"),
    ]:
        response = getattr(other_api, method)(f"{base(pipeline)}{path}", {"confirm": True}, format="json")
        assert response.status_code == 404, path
        assert response.json()["code"] == "not_found"
    assert other_api.get(f"/api/v1/pipelines/{pipeline.pk}/metrics/").status_code == 404
    assert api.get(base(pipeline)).json()["count"] == 2
