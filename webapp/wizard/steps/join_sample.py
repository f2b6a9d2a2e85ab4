"""The joined topic's sample at the join step: read over the time of this topic's sample, so that events which
join can meet in the preview, and the words that say how it was read.

The newest events of two topics, read one after the other, are often minutes or days apart, and the preview
then finds no event that joins although the topics do. So by default (the `From` choice `SPAN`) the joined topic
is read over the time the first sample covers, from its oldest to its newest event's Kafka timestamp, widened by
a margin (`sample_span`). When that time holds none of its events (or the first sample has no timestamps), its
newest events are read instead; `sample_words` says which it was, on the sample and above the preview.
"""

from __future__ import annotations

from typing import Any

from clearflow_spec.pace import duration
from webapp.wizard.models import WizardDraft
from webapp.wizard.steps.join_checks import left_events

SPAN = "span"  # the `From` choice that reads the joined topic over the first sample's time
# A joined event mostly follows the first one (a payment its order) by seconds to minutes. The span is read from
# its start and the sample stops at its count: a wide margin before would spend the count on events older than any
# of the first sample's, so it is small; the one after catches what follows the newest of them.
MARGIN_BEFORE_MS = 5_000
MARGIN_AFTER_MS = 60_000


def sample_span(draft: WizardDraft) -> dict[str, Any] | None:
    """The time to read the joined topic over: the first sample's, widened by the margins, as the worker's
    sample takes it (`start_ms`, `end_ms`), with what the words need (`seconds`: the first sample's own length,
    `of`: its topics). None when the first sample has no event with a timestamp."""
    events = [e for e in left_events(draft) if e.timestamp is not None]
    if not events:
        return None
    first = int(min(e.timestamp for e in events).timestamp() * 1000)
    last = int(max(e.timestamp for e in events).timestamp() * 1000)
    return {
        "start_ms": first - MARGIN_BEFORE_MS,
        "end_ms": last + MARGIN_AFTER_MS,
        "seconds": (last - first) / 1000,
        "of": ", ".join(sorted({e.topic for e in events})),
    }


def sample_words(section: dict[str, Any]) -> str:
    """How the stored sample of the joined topic (the draft's join section) was read, in words; "" when it was
    read as asked (its newest or oldest events), found the topic empty (the sample says so) or was never read.
    Its `span` says what the read over the first sample's time found: `sample_span` with `found`, the events the
    time held (0: the newest were read instead); `{"untimed": True}`: the first sample had no timestamps."""
    topic, events, span = section.get("topic"), section.get("events") or [], section.get("span")
    if not topic or not events or not span:
        return ""
    if span.get("untimed"):
        return f"The sample of this topic has no timestamps to match: showing the newest {_events(events)} of {topic}."
    if not span.get("found"):
        return f"No events of {topic} in the time of the {span['of']} sample; showing its newest {len(events)}."
    seconds = span.get("seconds") or 0
    when = f"over the same {duration(seconds)} as" if seconds >= 1 else "at the same time as"
    if len(events) >= (section.get("count") or 20):  # the time may hold more: a larger count reads further into it
        return (
            f"Joined topic sampled {when} {span['of']}: its first {len(events)} events of that time "
            "(a larger number of events reads further into it)."
        )
    return f"Joined topic sampled {when} {span['of']}: {_events(events)}."


def _events(events: list[Any]) -> str:
    return f"{len(events)} event{'' if len(events) == 1 else 's'}"
