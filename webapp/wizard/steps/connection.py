"""The connection steps' shared logic (step 1, Kafka, and step 6, ClickHouse): pick a saved connection or
enter a new one.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from webapp.wizard.connection_kinds import ConnectionKind, connection_data
from webapp.wizard.steps.common import add_validation_errors, initial_from


def connection_step_forms(request, draft, source, kind: ConnectionKind, post=None):
    connections = kind.list(user=request.user)
    stored = draft.section(kind.slug)
    if post is not None:
        choice = kind.choice_form(post, connections=connections)
        new = kind.new_form(post)
    else:
        initial = {
            "source": "saved" if stored.get("connection_id") else None,
            "connection": stored.get("connection_id"),
        }
        initial = {k: v for k, v in initial.items() if v is not None}
        if "connection" not in initial and len(connections[:2]) == 1:
            initial.update({"source": "saved", "connection": connections[0].pk})  # the only one: preselected
        initial.update(initial_from(source, kind.choice_form))
        choice = kind.choice_form(initial=initial, connections=connections)
        new = kind.new_form(initial=initial_from(source, kind.new_form, prefix="new"))
    return choice, new


def submit_connection(request, draft, kind: ConnectionKind):
    choice, new = connection_step_forms(request, draft, None, kind, post=request.POST)
    if not choice.is_valid():
        new.is_valid()
        return None, {"choice_form": choice, "new_form": new}
    if choice.cleaned_data["source"] == "saved":
        return choice.cleaned_data["connection"], None
    if not new.is_valid():
        return None, {"choice_form": choice, "new_form": new}
    try:
        connection = kind.create(owner=request.user, data=connection_data(new))
    except ValidationError as exc:
        add_validation_errors(new, exc)
        return None, {"choice_form": choice, "new_form": new}
    return connection, None
