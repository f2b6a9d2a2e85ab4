"""Step 7, an existing table: does it drop replayed inserts? If not, show the ALTER statement that makes it,
with a button that runs it, or let the user accept at-least-once (checked when Next is pressed).

The rule is the engine's (`clearflow_spec.exactly_once`); the reading and the ALTER are the pipelines' selector and
service (`webapp.pipelines.exactly_once`). Kept apart from `clickhouse.py` so that the step's own code stays small.
"""

from __future__ import annotations

from typing import Any

from clearflow_spec.exactly_once import DEFAULT_INSERT_DEDUP_WINDOW
from webapp.core.exceptions import ApplicationError
from webapp.pipelines import exactly_once
from webapp.wizard.models import WizardDraft

ACCEPT_FIELD = "accept_at_least_once"
# The partial the table step and the pipeline page share.
TEMPLATE = "pipelines/partials/exactly_once.html"


def insert_dedup_window(draft: WizardDraft) -> int:
    """The window an edited pipeline had (kept in the draft's spec), else the spec's default."""
    return draft.spec.sink.insert_dedup_window or DEFAULT_INSERT_DEDUP_WINDOW


def exactly_once_context(*, draft: WizardDraft, connection: Any, database: str, table: str) -> dict[str, Any]:
    """What the exactly-once partial (TEMPLATE) shows for `database.table`."""
    context: dict[str, Any] = {"draft": draft, "database": database, "table": table, "accept_field": ACCEPT_FIELD}
    if connection is None or not database or not table:
        return context
    try:
        context["result"] = exactly_once.table_insert_dedup_get(
            connection=connection, database=database, table=table, window=insert_dedup_window(draft)
        )
    except ApplicationError as exc:
        context["error"] = exc.message
    return context


def exactly_once_problem(
    *, draft: WizardDraft, connection: Any, database: str, table: str, accepted: bool
) -> str | None:
    """Why Next cannot go on with this existing table (None when it can): a table that would write a replayed
    micro-batch twice needs the setting applied or at-least-once accepted."""
    if accepted:
        return None
    context = exactly_once_context(draft=draft, connection=connection, database=database, table=table)
    result = context.get("result")
    if result is None or result.exactly_once:
        return None
    return (
        f"{database}.{table} does not drop replayed inserts, so this pipeline would be at-least-once: "
        "apply the setting shown, or tick the box to accept at-least-once."
    )
