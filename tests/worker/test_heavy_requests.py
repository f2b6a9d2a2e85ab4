"""Key advice and a sample are read by a real worker, not on the web thread: the API answers 202 at once with a URL,
and that URL answers the figures (or the events) once the worker has read them."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.webapp.conftest import produce_records

pytestmark = pytest.mark.django_db(transaction=True)

KAFKA = "/api/v1/connections/kafka/"


@pytest.fixture
def heavy_requests_read_here() -> None:
    """Not read in the test's process: the worker below reads them (tests/conftest.py's fixture of that name)."""


def poll(api, accepted, timeout: float = 60) -> object:
    assert accepted.status_code == 202, accepted.content
    assert accepted["Location"] == accepted.json()["url"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = api.get(accepted.json()["url"])
        if answer.status_code != 202:
            return answer
        assert answer.json()["progress"], answer.json()  # what the worker is doing, in words
        time.sleep(0.3)
    raise AssertionError(f"no answer in {timeout} s: {answer.json()}")


def test_the_worker_reads_key_advice_and_a_sample_while_the_api_answers_at_once(
    celery_worker, api, kafka_conn, kafka_bootstrap
):
    topic = f"heavy-{uuid.uuid4().hex[:8]}"
    values = [json.dumps({"event_id": f"e{i % 8}", "n": i}).encode() for i in range(10)]  # e0 and e1 come twice
    produce_records(kafka_bootstrap, topic, values, partitions=1)
    celery_worker.start()

    started = time.monotonic()
    accepted = api.post(f"{KAFKA}{kafka_conn.pk}/dedup-analysis/", {"topics": [topic], "keys": ["event_id"]}, "json")
    assert time.monotonic() - started < 2  # no events read on the web thread
    advice = poll(api, accepted)
    assert advice.status_code == 200, advice.content
    assert (advice.json()["scanned"], advice.json()["duplicates"]) == (10, 2)

    sample = poll(api, api.post(f"{KAFKA}{kafka_conn.pk}/sample/", {"topics": [topic], "count": 3}, "json"))
    assert [event["value"]["n"] for event in sample.json()] == [7, 8, 9]

    missing = poll(api, api.post(f"{KAFKA}{kafka_conn.pk}/sample/", {"topics": ["no-such-topic"]}, "json"))
    assert missing.status_code == 404 and "no-such-topic" in missing.json()["message"]
