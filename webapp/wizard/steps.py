"""The wizard's eight steps, in order. Pure data: no Django, no I/O."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    slug: str
    title: str
    lead: str


STEPS: tuple[Step, ...] = (
    Step("kafka", "Kafka connection", "Where the events come from: pick a saved connection or enter a new one."),
    Step("topics", "Topics", "Choose the topic or topics to read."),
    Step("sample", "Sample and schema", "Look at real events and check the fields ClearFlow found in them."),
    Step("dedup", "Deduplication", "Which field(s) identify an event, and for how long to remember them."),
    Step("transform", "Filter and computed fields", "Optional: keep only some events, or add computed fields."),
    Step("clickhouse", "ClickHouse destination", "Where the rows go: a connection, a database and a table."),
    Step("mapping", "Mapping", "Which field goes into which column."),
    Step("review", "Review and deploy", "Check everything, name the pipeline and deploy it."),
)
SLUGS: tuple[str, ...] = tuple(step.slug for step in STEPS)


def step_index(slug: str) -> int:
    """0-based position of a step; ValueError for an unknown slug."""
    return SLUGS.index(slug)


def step_by_slug(slug: str) -> Step:
    return STEPS[step_index(slug)]


def next_slug(slug: str) -> str | None:
    index = step_index(slug)
    return SLUGS[index + 1] if index + 1 < len(SLUGS) else None


def previous_slug(slug: str) -> str | None:
    index = step_index(slug)
    return SLUGS[index - 1] if index > 0 else None
