"""The join preview on two samples (what the wizard's join step shows): the engine's rules in Python."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from clearflow_spec.spec import parse_spec
from tests.clearflow_spec.test_join_spec import doc_example
from webapp.connections.kafka_client import SampledEvent
from webapp.pipelines.join_preview import join_preview, right_sample_issues

pytestmark = pytest.mark.fast

START = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)


def sampled(topic: str, offset: int, value: dict, minutes: int = 0) -> SampledEvent:
    return SampledEvent(topic, 0, offset, START + timedelta(minutes=minutes), None, value, True, 10)


ORDERS = [
    sampled("orders", 0, {"order_id": "o1", "customer": {"id": "c1"}, "amount": 30.0}),
    sampled("orders", 1, {"order_id": "o2", "customer": {"id": "c2"}, "amount": 12.5}),
    sampled("orders", 2, {"order_id": "o3", "customer": {"id": "c3"}, "amount": 5.0}),
]
PAYMENTS = [
    sampled("payments", 0, {"payment_id": "p1", "order_id": "o1", "paid": 20.0}, minutes=10),
    sampled("payments", 1, {"payment_id": "p3", "order_id": "o3", "paid": 5.0}, minutes=45),  # after the window
]


def test_a_left_join_preview_shows_matches_and_unmatched_orders_with_empty_payment_fields():
    rows = join_preview(parse_spec(doc_example()), ORDERS, PAYMENTS)
    assert [(r["left.order_id"], r["right.payment_id"], r["right.paid"]) for r in rows] == [
        ("o1", "p1", 20.0),
        ("o2", None, None),
        ("o3", None, None),  # its payment came 45 minutes later: outside the 30-minute window
    ]
    assert rows[0]["left.customer.id"] == "c1"


def test_an_inner_join_preview_shows_matches_only():
    data = doc_example()
    data["join"]["type"] = "inner"
    rows = join_preview(parse_spec(data), ORDERS, PAYMENTS)
    assert [(r["left.order_id"], r["right.payment_id"]) for r in rows] == [("o1", "p1")]


def test_an_empty_right_sample_is_an_error_at_the_right_topics():
    issues = right_sample_issues(parse_spec(doc_example()), [])
    assert [(i.path, i.message) for i in issues] == [
        (
            "join.source.topics",
            "no events in the sample of 'payments': the join's fields and keys cannot be checked; produce some "
            "events to the topic first, or pick another topic",
        )
    ]
    assert right_sample_issues(parse_spec(doc_example()), PAYMENTS) == []
