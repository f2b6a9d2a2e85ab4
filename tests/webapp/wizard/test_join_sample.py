"""The time the join step reads the joined topic over (the first sample's, with its margins), and the words that
say how the joined topic's sample was read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from webapp.wizard.models import WizardDraft
from webapp.wizard.steps.join_sample import MARGIN_AFTER_MS, MARGIN_BEFORE_MS, sample_span, sample_words

pytestmark = pytest.mark.fast

NOON = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
NOON_MS = int(NOON.timestamp() * 1000)


def left_draft(*timestamps: datetime | None) -> WizardDraft:
    events = [
        {"topic": "orders", "offset": i, "timestamp": t.isoformat() if t else None, "value": {}, "is_json": True}
        for i, t in enumerate(timestamps)
    ]
    return WizardDraft(data={"sample": {"events": events}})


def test_the_span_is_the_first_samples_time_widened_by_the_margins():
    draft = left_draft(NOON + timedelta(minutes=2), NOON, None, NOON + timedelta(seconds=30))
    assert sample_span(draft) == {
        "start_ms": NOON_MS - MARGIN_BEFORE_MS,
        "end_ms": NOON_MS + 120_000 + MARGIN_AFTER_MS,
        "seconds": 120.0,
        "of": "orders",
    }


def test_a_first_sample_without_timestamps_has_no_span():
    assert sample_span(left_draft(None, None)) is None
    assert sample_span(WizardDraft(data={})) is None


def joined(events: int, span: dict | None, *, count: int = 20) -> dict:
    """The draft's join section after a fetch of `payments`."""
    return {"topic": "payments", "events": [{"offset": i} for i in range(events)], "count": count, "span": span}


SPAN = {"start_ms": 0, "end_ms": 1, "seconds": 120.0, "of": "orders"}


@pytest.mark.parametrize(
    ("section", "words"),
    [
        (joined(14, {**SPAN, "found": 14}), "Joined topic sampled over the same 2 min as orders: 14 events."),
        (joined(1, {**SPAN, "found": 1}), "Joined topic sampled over the same 2 min as orders: 1 event."),
        (
            joined(3, {**SPAN, "seconds": 0.0, "found": 3}),
            "Joined topic sampled at the same time as orders: 3 events.",
        ),
        (
            joined(20, {**SPAN, "found": 20}),
            "Joined topic sampled over the same 2 min as orders: its first 20 events of that time "
            "(a larger number of events reads further into it).",
        ),
        (
            joined(20, {**SPAN, "found": 0}),
            "No events of payments in the time of the orders sample; showing its newest 20.",
        ),
        (
            joined(7, {"untimed": True}),
            "The sample of this topic has no timestamps to match: showing the newest 7 events of payments.",
        ),
    ],
    ids=["found", "one", "an-instant", "more-than-the-count", "none-then-newest", "untimed"],
)
def test_the_words_say_how_the_joined_topic_was_sampled(section, words):
    assert sample_words(section) == words


def test_no_words_for_a_sample_read_as_asked_an_empty_topic_or_none_yet():
    assert sample_words(joined(20, None)) == ""  # its newest or oldest, as the user chose
    assert sample_words(joined(0, {**SPAN, "found": 0})) == ""  # the area says the topic has no events
    assert sample_words({}) == ""
