"""A topic's sample over a time span against the real broker: the events within it, and its edges (a span that
holds none, one before or past the topic's events, an empty topic), each answered at once."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from clearflow_spec.connections import KafkaConnectionSpec
from webapp.connections.kafka_client import KafkaTopicNotFoundError
from webapp.connections.kafka_span import sample_span

# tests/webapp/conftest.py's `orders`: seq i written at BASE_MS + i seconds, over two partitions.
BASE_MS = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp() * 1000)


@pytest.fixture
def settings_(kafka_bootstrap) -> KafkaConnectionSpec:
    return KafkaConnectionSpec(bootstrap_servers=kafka_bootstrap)


def seconds(first: float, last: float) -> dict[str, int]:
    return {"start_ms": int(BASE_MS + first * 1000), "end_ms": int(BASE_MS + last * 1000)}


def test_the_events_within_the_span_both_ends_included_oldest_first(settings_, topics):
    found = sample_span(settings_, topics=[topics.orders], **seconds(5, 9), count=20)
    assert [e.value["seq"] for e in found] == [5, 6, 7, 8, 9]  # from both partitions, in time order


def test_a_span_holding_more_than_the_count_gives_its_first_events(settings_, topics):
    found = sample_span(settings_, topics=[topics.orders], **seconds(5, 9), count=3)
    assert [e.value["seq"] for e in found] == [5, 6, 7]


@pytest.mark.parametrize(
    "span",
    [
        pytest.param(seconds(5.1, 5.9), id="between-two-events"),
        pytest.param(seconds(-60, -1), id="before-the-first"),
        pytest.param(seconds(60, 120), id="past-the-last"),
        pytest.param({"start_ms": -5000, "end_ms": -1}, id="before-the-epoch"),
        pytest.param(seconds(9, 5), id="ends-before-it-starts"),
    ],
)
def test_a_span_without_events_answers_none_at_once(settings_, topics, span):
    started = time.monotonic()
    found = sample_span(settings_, topics=[topics.orders], **span, count=20)
    assert found == []
    assert time.monotonic() - started < 3  # not the 5 s deadline: nothing waited for


def test_a_span_reaching_past_the_end_gives_the_last_events(settings_, topics):
    found = sample_span(settings_, topics=[topics.orders], **seconds(27, 3600), count=20)
    assert [e.value["seq"] for e in found] == [27, 28, 29]


def test_an_empty_topic_answers_none_and_an_unknown_one_is_named(settings_, topics):
    assert sample_span(settings_, topics=[topics.empty], **seconds(0, 60)) == []
    with pytest.raises(KafkaTopicNotFoundError, match="No such topic: no-such-topic"):
        sample_span(settings_, topics=["no-such-topic"], **seconds(0, 60))
