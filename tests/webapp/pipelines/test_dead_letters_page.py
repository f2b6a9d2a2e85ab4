"""The dead-letter card of the pipeline page: list, download, replay and purge from the browser's forms."""

from __future__ import annotations

import json
import uuid

import pytest
from django.urls import reverse

from tests.webapp.conftest import orders_spec, produce_records
from tests.webapp.pipelines.dead_letter_helpers import Event, new_database, write_dead_letters
from webapp.connections.kafka_client import sample_events
from webapp.pipelines import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic(kafka_bootstrap) -> str:
    name = f"dlq_page_{uuid.uuid4().hex[:8]}"
    produce_records(kafka_bootstrap, name, [])
    return name


@pytest.fixture
def database(clickhouse_server) -> str:
    return new_database(clickhouse_server)


@pytest.fixture
def pipeline(owner, kafka_connection, clickhouse_connection, topic, database):
    pipeline = services.pipeline_create(
        owner=owner,
        name=f"dlq-page-{uuid.uuid4().hex[:6]}",
        kafka_connection=kafka_connection,
        clickhouse_connection=clickhouse_connection,
        spec=orders_spec(topic, database, create_table=True),
    )
    write_dead_letters(
        pipeline, [Event(topic, 0, i, f'{{"order_id": "bad-{i}"}}', "order_id: not a UUID") for i in range(30)]
    )
    return pipeline


def url(name: str, pipeline) -> str:
    return reverse(f"pipelines:{name}", kwargs={"pk": pipeline.pk})


def test_the_list_pages_through_newest_first(owner_client, pipeline, database):
    html = owner_client.get(url("dead_letters", pipeline)).content.decode()
    assert f'<code id="dead-letter-table">{database}.orders_dlq</code>' in html
    assert '<span id="dead-letter-count">30</span> dead letters' in html
    assert html.count("order_id: not a UUID") == 25
    assert "Page 1 of 2" in html and "?page=2" in html
    second = owner_client.get(url("dead_letters", pipeline), {"page": 2}).content.decode()
    assert second.count("order_id: not a UUID") == 5
    assert 'data-label="Offset" data-raw-number>0</td>' in second  # the oldest offset is on the last page


def test_download_replay_and_purge(owner_client, pipeline, topic, kafka_connection):
    response = owner_client.get(url("dead_letters_download", pipeline))
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) == 30 and json.loads(lines[0])["reason"] == "order_id: not a UUID"

    response = owner_client.post(url("dead_letters_replay", pipeline), follow=True)
    assert "Replayed 30 dead letters to their topics." in response.content.decode()
    arrived = sample_events(kafka_connection.client_settings(), topics=[topic], count=100, position="oldest")
    assert len(arrived) == 30

    write_dead_letters(pipeline, [Event(topic, 0, 500, "x", "invalid JSON")])
    response = owner_client.post(url("dead_letters_purge", pipeline), follow=True)
    assert "Purge needs confirmation." in response.content.decode()
    response = owner_client.post(url("dead_letters_purge", pipeline), {"confirm": "yes"}, follow=True)
    assert "Deleted 1 dead letter." in response.content.decode()
    assert '<span id="dead-letter-count">0</span>' in owner_client.get(url("dead_letters", pipeline)).content.decode()


def test_an_outsider_gets_404_and_nothing_changes(other, owner_client, pipeline):
    from django.test import Client

    client = Client()
    client.force_login(other)
    for name, method in [
        ("dead_letters", "get"),
        ("dead_letters_download", "get"),
        ("dead_letters_replay", "post"),
        ("dead_letters_purge", "post"),
        ("metrics", "get"),
    ]:
        assert getattr(client, method)(url(name, pipeline), {"confirm": "yes"}).status_code == 404, name
    assert '<span id="dead-letter-count">30</span>' in owner_client.get(url("dead_letters", pipeline)).content.decode()
