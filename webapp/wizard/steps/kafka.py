"""Step 1, Kafka connection.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from webapp.wizard.connection_kinds import KAFKA
from webapp.wizard.services import draft_save_step
from webapp.wizard.steps.connection import connection_step_forms, submit_connection


def kafka_show(request, draft, source):
    choice, new = connection_step_forms(request, draft, source, KAFKA)
    return {"choice_form": choice, "new_form": new}


def kafka_submit(request, draft):
    connection, context = submit_connection(request, draft, KAFKA)
    if context is not None:
        return context
    draft_save_step(draft=draft, step="kafka", values={"connection_id": connection.pk}, advance=True)
    return None
