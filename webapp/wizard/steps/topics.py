"""Step 2: the topic or topics to read: chosen from the list, or every topic matching a pattern
(`source.topic_pattern`).

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from clearflow_spec.spec_base import check_topic_pattern, topic_matches
from webapp.connections import selectors as conn_selectors
from webapp.core.exceptions import ApplicationError
from webapp.wizard.services import draft_save_step, draft_update_section
from webapp.wizard.steps.common import draft_topics, kafka_connection_of


def topics_show(request, draft, source):
    selected = source.getlist("topics") if source else (draft.spec.source.topics or [])
    pattern = source.get("topic_pattern", "") if source else (draft.spec.source.topic_pattern or "")
    return {
        "selected": selected,
        "topic_pattern": pattern,
        "matched": draft_topics(draft) if draft.spec.source.topic_pattern else [],
        "connection": kafka_connection_of(request, draft),
    }


def topics_submit(request, draft):
    selected = [t for t in request.POST.getlist("topics") if t]
    pattern = request.POST.get("topic_pattern", "").strip()
    context = {"selected": selected, "topic_pattern": pattern, "connection": kafka_connection_of(request, draft)}
    if selected and pattern:
        context["error"] = "Choose topics or give a pattern, not both: clear the pattern or the ticks."
        return context
    if not selected and not pattern:
        context["error"] = "Choose at least one topic, or give a pattern that matches the topics to read."
        return context
    if pattern:
        try:
            check_topic_pattern(pattern)
        except ValueError as exc:
            context["error"] = str(exc)
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
    if pattern:
        matched = sorted(t for t in known if topic_matches(pattern, t))
        if not matched:
            context["error"] = (
                f"No topic on this cluster matches {pattern!r} (the whole name must match, e.g. 'orders\\..*' for "
                "orders.eu and orders.us): change the pattern, or create a topic it matches first."
            )
            return context
    else:
        matched = []
        missing = [t for t in selected if t not in known]
        if missing:
            context["error"] = f"No such topic on this cluster: {', '.join(missing)}."
            return context
    previous = draft_topics(draft)
    spec = draft.spec.model_copy(deep=True)
    spec.source.topics = selected or None
    spec.source.topic_pattern = pattern or None
    # The topics the pattern matches now, for the steps that read events (sample, key advice, sizing).
    draft_save_step(draft=draft, step="topics", values={"matched": matched}, spec=spec, advance=True)
    if previous and previous != (selected or matched):
        # Another topic means another sample: the old one is dropped, the hand-edited schema is kept.
        draft_update_section(draft=draft, step="sample", changes={"events": [], "fetched_at": None})
    return None
