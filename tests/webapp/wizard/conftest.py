"""Users, saved connections and a topic with known duplicates, for the wizard's server-side tests."""

from __future__ import annotations

import uuid

import pytest

from tests.webapp.wizard.kafka_events import produce, user_events
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.services import pipeline_create

EVENT_COUNT = 20
DUPLICATES = 3
WITHOUT_KEY = 1


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def kafka_connection(owner, kafka_bootstrap):
    return kafka_connection_create(owner=owner, data={"name": "local", "bootstrap_servers": kafka_bootstrap})


@pytest.fixture
def clickhouse_connection(owner, clickhouse_server):
    return clickhouse_connection_create(
        owner=owner, data={"name": "local-ch", "host": clickhouse_server.host, "port": clickhouse_server.port}
    )


@pytest.fixture
def create_pipeline(owner, kafka_connection, clickhouse_connection):
    """Makes a draft pipeline of the owner's with a one-field spec (topic t into default.t), by name."""

    def create(name: str):
        return pipeline_create(
            owner=owner,
            name=name,
            kafka_connection=kafka_connection,
            clickhouse_connection=clickhouse_connection,
            spec={
                "source": {"topics": ["t"], "fields": [{"path": "a", "type": "string"}]},
                "sink": {
                    "clickhouse": {"database": "default"},
                    "table": "t",
                    "columns": [{"field": "a", "column": "a", "type": "String"}],
                },
            },
        )

    return create


@pytest.fixture(scope="session")
def users_topic(kafka_bootstrap) -> str:
    """A topic with 20 sign-ups: 16 distinct, 3 repeated, 1 without event_id."""
    topic = f"users_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, user_events(EVENT_COUNT, duplicates=DUPLICATES, without_key=WITHOUT_KEY))
    return topic


@pytest.fixture(scope="session")
def empty_topic(kafka_bootstrap) -> str:
    topic = f"empty_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, [])
    return topic
