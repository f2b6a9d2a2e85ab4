"""The connection steps' shared logic (step 1, Kafka, and step 7, ClickHouse): pick a saved connection or
enter a new one.

A new connection is tested before it is saved: one that does not answer is not saved, its error goes next to
the field that caused it, and the step offers "Save anyway" (action `save_anyway`) for a cluster that is
down for now. A connection this draft saved before (e.g. anyway) is updated when its name is entered again.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from webapp.connections.forms import SAVE_ANYWAY, connection_data
from webapp.connections.selectors import connections_by_use
from webapp.core.forms import add_validation_errors
from webapp.wizard.connection_kinds import ConnectionKind
from webapp.wizard.services import SAVED_HERE_KEY, draft_note_saved_connection
from webapp.wizard.steps.common import draft_workspace, initial_from
from webapp.workspaces import policy


def connection_step_forms(request, draft, source, kind: ConnectionKind, post=None):
    connections = connections_by_use(kind.list(user=request.user, workspace=draft_workspace(request, draft)))
    stored = draft.section(kind.slug)
    if post is not None:
        choice = kind.choice_form(post, connections=connections)
        new = kind.form(post)
    else:
        initial = {
            "source": "saved" if stored.get("connection_id") else None,
            "connection": stored.get("connection_id"),
        }
        initial = {k: v for k, v in initial.items() if v is not None}
        first_two = list(connections[:2])  # one query: the default comes first
        if "connection" not in initial and first_two and (first_two[0].is_default or len(first_two) == 1):
            initial.update({"source": "saved", "connection": first_two[0].pk})  # the default, or the only one
        initial.update(initial_from(source, kind.choice_form))
        choice = kind.choice_form(initial=initial, connections=connections)
        new = kind.form(initial=initial_from(source, kind.form, prefix="new"))
    return choice, new


def submit_connection(request, draft, kind: ConnectionKind):
    """(the chosen or newly saved connection, None), or (None, the step's context with the errors)."""
    choice, new = connection_step_forms(request, draft, None, kind, post=request.POST)
    failed: dict[str, Any] = {"choice_form": choice, "new_form": new, "status": 422}
    if not choice.is_valid():
        new.is_valid()
        return None, failed
    if choice.cleaned_data["source"] == "saved":
        return choice.cleaned_data["connection"], None
    if not new.is_valid():
        return None, failed
    data = connection_data(new)
    if request.POST.get("action") != SAVE_ANYWAY:
        outcome = kind.test_before_saving(request.user, data, new)
        if outcome == "unreachable":
            failed["save_anyway"] = {"secrets_typed": any(data.get(name) for name in kind.secrets)}
        if outcome != "ok":
            return None, failed
    earlier = _saved_here(request, draft, kind, name=data["name"])
    workspace = draft_workspace(request, draft)
    try:
        if earlier is not None:
            policy.require(request.user, "connection.edit", workspace)
            connection = kind.update(connection=earlier, data=data, actor=request.user)
        else:
            policy.require(request.user, "connection.create", workspace)
            connection = kind.create(owner=request.user, data=data, workspace=workspace)
            draft_note_saved_connection(draft=draft, kind=kind.slug, pk=connection.pk)
    except ValidationError as exc:
        add_validation_errors(new, exc)
        return None, failed
    return connection, None


def _saved_here(request, draft, kind: ConnectionKind, *, name: str):
    """The connection named `name` that this draft saved earlier and no pipeline uses yet: entering the name
    again corrects it instead of failing with "the workspace already has a connection named…"."""
    ids = (draft.data.get(SAVED_HERE_KEY) or {}).get(kind.slug) or []
    return (
        kind.list(user=request.user, workspace=draft_workspace(request, draft))
        .filter(pk__in=ids, name=name, pipelines__isnull=True)
        .first()
    )
