"""Topics with known duplicates for the wizard's server-side tests (users, connections: tests/webapp/conftest.py)."""

from __future__ import annotations

import uuid

import pytest

from tests.webapp.wizard.kafka_events import produce, user_events

EVENT_COUNT = 20
DUPLICATES = 3
WITHOUT_KEY = 1


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
