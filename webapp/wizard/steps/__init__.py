"""The wizard's nine steps, in order, and one module per step beside this one.

This module is pure data (no Django, no I/O). Each step module (`kafka`, `topics`, `sample`, `dedup`, `join`,
`transform`, `clickhouse`, `mapping`, `review`) has `<step>_show(request, draft, source)` -> template context
and `<step>_submit(request, draft)` -> None when the step was stored (the view then moves on), a context with
the errors to show next to the fields, or (the review step, once the pipeline is saved) a redirect.
`source` is what the user typed last time they left the step with Back (a MultiValueDict), or None.
`handlers.HANDLERS` maps each slug to its pair; `common` holds what several steps share and `connection` the
logic of the two connection steps.

The work itself is done by the connections and pipelines services and selectors, and by the spec module
(`clearflow_spec.spec`); the step modules only turn forms into their arguments and their errors into messages.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    slug: str
    title: str
    lead: str
    # An optional step does not hold the user back: reaching it also opens the step after it (see
    # `services.draft_save_step`), so a draft that never saves it works as before the step existed.
    optional: bool = False


STEPS: tuple[Step, ...] = (
    Step("kafka", "Kafka connection", "Where the events come from: pick a saved connection or enter a new one."),
    Step("topics", "Topics", "Choose the topic or topics to read, or a pattern that matches them."),
    Step("sample", "Sample and schema", "Look at real events and check the fields ClearFlow found in them."),
    Step("dedup", "Deduplication", "Which field(s) identify an event, and for how long to remember them."),
    Step(
        "join",
        "Join another topic",
        "Optional: join each event with the events of a second topic that share a key, within a time window.",
        optional=True,
    ),
    Step("transform", "Filter and computed fields", "Optional: keep only some events, or add computed fields."),
    Step("clickhouse", "ClickHouse destination", "Where the rows go: a connection, a database and a table."),
    Step("mapping", "Mapping", "Which field goes into which column."),
    Step("review", "Review and deploy", "Check everything, name the pipeline and deploy it."),
)
SLUGS: tuple[str, ...] = tuple(step.slug for step in STEPS)


def reached_after(slug: str) -> str:
    """The furthest step that saving `slug` opens: the next one, and past it every optional step in a row and
    the step after them."""
    index = step_index(slug) + 1
    while index < len(SLUGS) - 1 and STEPS[index].optional:
        index += 1
    return SLUGS[min(index, len(SLUGS) - 1)]


def step_index(slug: str) -> int:
    """0-based position of a step; ValueError for an unknown slug."""
    return SLUGS.index(slug)


def step_by_slug(slug: str) -> Step:
    return STEPS[step_index(slug)]


def previous_slug(slug: str) -> str | None:
    index = step_index(slug)
    return SLUGS[index - 1] if index > 0 else None
