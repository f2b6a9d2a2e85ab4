"""Step 2: the topic or topics to read.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from webapp.connections import selectors as conn_selectors
from webapp.core.exceptions import ApplicationError
from webapp.wizard.services import draft_save_step, draft_update_section
from webapp.wizard.steps.common import kafka_connection_of


def topics_show(request, draft, source):
    selected = source.getlist("topics") if source else (draft.spec.source.topics or [])
    return {"selected": selected, "connection": kafka_connection_of(request, draft)}


def topics_submit(request, draft):
    selected = [t for t in request.POST.getlist("topics") if t]
    context = {"selected": selected, "connection": kafka_connection_of(request, draft)}
    if not selected:
        context["error"] = "Choose at least one topic."
        return context
    connection = context["connection"]
    if connection is None:
        context["error"] = "The Kafka connection is gone: go back to step 1 and choose one."
        return context
    try:
        known = {t.name for t in conn_selectors.kafka_topic_list(connection=connection)}
    except ApplicationError as exc:
        context["error"] = f"Could not check the topics: {exc.message}"
        return context
    missing = [t for t in selected if t not in known]
    if missing:
        context["error"] = f"No such topic on this cluster: {', '.join(missing)}."
        return context
    previous = draft.spec.source.topics or []
    spec = draft.spec.model_copy(deep=True)
    spec.source.topics = selected
    draft_save_step(draft=draft, step="topics", spec=spec, advance=True)
    if previous and previous != selected:
        # Another topic means another sample: the old one is dropped, the hand-edited schema is kept.
        draft_update_section(draft=draft, step="sample", changes={"events": [], "fetched_at": None})
    return None
