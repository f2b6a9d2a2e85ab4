"""Step 5 (optional): join another topic of the same Kafka connection, in time.

The page holds the join form (`forms.JoinForm`: on/off, the right topic, the sample size, window, type, time), the
right side's schema rows (`r<n>-path`, as the sample step's `f<n>-`), its dedup (the dedup step's `DedupForm`,
prefixed `right`) and the key rows (`k<n>-left` -> `k<n>-right`). The right sample is fetched by
`webapp.wizard.join_views` and kept in the draft's `join` section; the preview joins it with the left sample.
The checks are the API's (`join_checks`), each message next to its field.

"No join" saves `join` as None: the spec stays version 1 (`clearflow_spec.spec.version_for`). Turning the join on or
off renames every field the mapping can use (`left.x` / `x`): the mapping is then asked again.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from clearflow_spec import spec as specmod
from clearflow_spec.connections import connection_dict
from webapp.connections import selectors as conn_selectors
from webapp.core.exceptions import ApplicationError
from webapp.wizard import forms
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_save_step
from webapp.wizard.steps.common import FIELD_TYPE_CHOICES, form_rows, initial_from, kafka_connection_of, schema_fields
from webapp.wizard.steps.dedup import dedup_initial_of
from webapp.wizard.steps.join_checks import JOIN_SECTION, join_issues, place_issues, preview_rows
from webapp.wizard.steps.join_sample import SPAN, sample_words
from webapp.wizard.steps.sample import field_rows_from, parse_field_rows, sample_examples, validate_field_rows

RIGHT_ROWS = "r"  # the right side's schema rows: r<n>-path, r<n>-type, ...
RIGHT_DEDUP = "right"  # the right side's DedupForm prefix: right-keys, right-window, ...
KEY_ROWS = "k"  # the join keys: k<n>-left, k<n>-right


@dataclass
class JoinInput:
    """The join step's form as read (posted, typed before, or from the draft), and the join it makes (None: off,
    or not valid yet)."""

    form: forms.JoinForm
    rows: list[dict[str, Any]]
    dedup_form: forms.DedupForm
    keys: list[dict[str, Any]]
    join: specmod.JoinSpec | None = None
    problems: list[str] = field(default_factory=list)
    rows_error: str = ""

    @property
    def ok(self) -> bool:
        return not (
            self.form.errors
            or self.dedup_form.errors
            or self.problems
            or self.rows_error
            or any(r["errors"] for r in self.rows)
            or any(k["errors"] for k in self.keys)
        )


def left_paths(draft: WizardDraft) -> list[str]:
    return [f["path"] for f in schema_fields(draft) if f.get("type") != "json"]


def _time_paths(fields: list[dict[str, Any]]) -> list[str]:
    return [f["path"] for f in fields if f.get("type") == "datetime"]


def right_topics(request, draft: WizardDraft) -> tuple[list[str], str]:
    """The topics the right side may read (the connection's, but the left side's), and why none are listed."""
    connection = kafka_connection_of(request, draft)
    if connection is None:
        return [], "The Kafka connection is gone: go back to step 1 and choose one."
    try:
        names = [t.name for t in conn_selectors.kafka_topic_list(connection=connection)]
    except ApplicationError as exc:
        return [], f"Could not list the topics: {exc.message}"
    left = set(draft.spec.source.topics or [])
    return [name for name in names if name not in left], ""


def join_form(draft, data=None, *, topics=(), initial=None) -> forms.JoinForm:
    return forms.JoinForm(data, initial=initial, topics=topics, left_time_paths=_time_paths(schema_fields(draft)))


def right_dedup_form(rows, data=None, initial=None) -> forms.DedupForm:
    paths = [r["path"] for r in rows if r.get("path") and r.get("type") != "json"]
    return forms.DedupForm(
        data, initial=initial, prefix=RIGHT_DEDUP, field_paths=paths, time_paths=_time_paths(list(rows))
    )


def _key_rows(post: Any) -> list[dict[str, Any]]:
    rows = [r for r in form_rows(post, KEY_ROWS, ("left", "right")) if r["left"] or r["right"]]
    for row in rows:
        row["errors"] = {}
    return rows


def _right_fields(draft: WizardDraft) -> list[dict[str, Any]]:
    """The right side's stored fields with the step's notes (examples, nullable), as the sample step's rows."""
    join = draft.spec.join if draft.spec.is_set("join") else None
    notes = draft.section(JOIN_SECTION).get("notes") or {}
    fields = [] if join is None else join.source.fields
    return [
        {"nullable": False, "manual": True, "examples": [], **(notes.get(f.path) or {}), **f.model_dump()}
        for f in fields
    ]


def _initial(draft: WizardDraft) -> dict[str, Any]:
    """The join form's values from the draft's spec (off when the step was never saved)."""
    section = draft.section(JOIN_SECTION)
    join = draft.spec.join if draft.spec.is_set("join") else None
    initial: dict[str, Any] = {"count": section.get("count", 20), "position": section.get("position", SPAN)}
    if join is None:
        return {**initial, "enabled": "off", "window": "30m", "type": "inner", "time": "ingestion"}
    presets = {value for value, _ in forms.JOIN_WINDOW_PRESETS}
    return {
        **initial,
        "enabled": "on",
        "right_topic": join.source.topics[0],
        "window": join.window if join.window in presets else "custom",
        "custom_window": "" if join.window in presets else join.window,
        "type": join.type,
        "time": join.time,
        "left_time_field": join.left_time_field or "",
        "right_time_field": join.right_time_field or "",
    }


def read_join(draft: WizardDraft, post: Any, *, topics: list[str], kafka: dict[str, Any]) -> JoinInput:
    """The posted join step: each part validated by its own form and rules, then the join built as the spec's
    `JoinSpec` and checked by the API's join rules and its sample check (the cluster is asked on submit only)."""
    rows = parse_field_rows(post, sample_examples(draft.section(JOIN_SECTION).get("events", [])), prefix=RIGHT_ROWS)
    form = join_form(draft, post, topics=topics)
    dedup_form = right_dedup_form(rows, post)
    keys = _key_rows(post)
    read = JoinInput(form, rows, dedup_form, keys)
    if not form.is_valid() or form.cleaned_data["enabled"] != "on":
        # The rest is hidden while the join is off: kept as typed, not checked.
        read.dedup_form = right_dedup_form(rows, initial=initial_from(post, forms.DedupForm, prefix=RIGHT_DEDUP))
        return read
    if not rows:
        read.rows_error = "Add at least one field of the joined topic: fetch a sample, or add the fields by hand."
    validate_field_rows(rows)
    dedup_form.is_valid()
    if not keys:
        read.problems.append("Choose at least one join key: a field of this topic and the field of the joined topic.")
    for key in keys:
        for side in ("left", "right"):
            if not key[side]:
                key["errors"][side] = "Choose a field."
    window = form.chosen_window
    try:
        specmod.parse_window(window)
    except ValueError as exc:
        form.add_error("custom_window" if form.cleaned_data["window"] == "custom" else "window", str(exc))
    if not read.ok:
        return read
    data = form.cleaned_data
    dedup = dedup_form.cleaned_data
    try:
        read.join = specmod.JoinSpec.model_validate(
            {
                "source": {
                    "kafka": kafka,
                    "topics": [data["right_topic"]],
                    "format": draft.spec.source.format or "json",
                    "fields": [{"path": r["path"], "type": r["type"]} for r in rows],
                },
                "dedup": None if dedup["enabled"] == "off" else _dedup_section(dedup),
                "keys": [{"left": k["left"], "right": k["right"]} for k in keys],
                "window": window,
                "type": data["type"],
                "time": data["time"],
                "left_time_field": data["left_time_field"] or None if data["time"] == "event" else None,
                "right_time_field": data["right_time_field"] or None if data["time"] == "event" else None,
            }
        )
    except PydanticValidationError as exc:
        read.problems += [str(e["msg"]).removeprefix("Value error, ") for e in exc.errors()]
        return read
    return read


def _dedup_section(data: dict[str, Any]) -> dict[str, Any]:
    event_time = data["time_basis"] == "event_time"
    return {
        "keys": data["keys"],
        "window": data["custom_window"].strip() if data["window"] == "custom" else data["window"],
        "time": "event" if event_time else "ingestion",
        "event_time_field": data["event_time_field"] if event_time else None,
    }


def kafka_section(request, draft: WizardDraft) -> dict[str, Any]:
    """The right side's `kafka`, which the spec's JoinSpec requires: the pipeline's connection, secrets masked (the
    draft keeps no secret). The connection's current section replaces it when the spec is checked and saved
    (`stored_specs.merge_connections`), as the left side's."""
    connection = kafka_connection_of(request, draft)
    if connection is None:
        return {}
    return connection_dict(connection.to_spec(), reveal_secrets=False)


def _unbound(draft: WizardDraft, source: Any, topics: list[str]) -> JoinInput:
    """The step as shown: what was typed before (`source`), else the draft's join."""
    if source:
        rows = parse_field_rows(source, sample_examples(draft.section(JOIN_SECTION).get("events", [])), RIGHT_ROWS)
        form = join_form(draft, topics=topics, initial=initial_from(source, forms.JoinForm))
        dedup = right_dedup_form(rows, initial=initial_from(source, forms.DedupForm, prefix=RIGHT_DEDUP))
        return JoinInput(form, rows, dedup, _key_rows(source))
    rows = field_rows_from(_right_fields(draft))
    join = draft.spec.join if draft.spec.is_set("join") else None
    dedup_initial = dedup_initial_of(join.dedup) if join is not None else {}
    dedup = right_dedup_form(
        rows, initial=dedup_initial or {"enabled": "on", "window": "1h", "time_basis": "ingestion"}
    )
    keys = [
        {"index": str(i), "left": k.left, "right": k.right, "errors": {}}
        for i, k in enumerate(join.keys if join else [])
    ]
    return JoinInput(join_form(draft, topics=topics, initial=_initial(draft)), rows, dedup, keys)


def join_context(draft: WizardDraft, read: JoinInput, topics_error: str = "") -> dict[str, Any]:
    section = draft.section(JOIN_SECTION)
    right_paths = [r["path"] for r in read.rows if r.get("path") and r.get("type") != "json"]
    return {
        "form": read.form,
        "rows": read.rows,
        "rows_error": read.rows_error,
        "dedup_form": read.dedup_form,
        "keys": read.keys or [{"index": "0", "left": "", "right": "", "errors": {}}],
        "problems": read.problems,
        "left_paths": left_paths(draft),
        "right_paths": right_paths,
        "right_time_paths": _time_paths(read.rows),
        "left_topics": draft.spec.source.topics or [],
        "events": section.get("events", []),
        "fetched_at": section.get("fetched_at"),
        "sampled_topic": section.get("topic"),
        "sample_words": sample_words(section),
        "field_types": FIELD_TYPE_CHOICES,
        "prefix": RIGHT_ROWS,
        "topics_error": topics_error,
    }


def join_show(request, draft, source):
    topics, topics_error = right_topics(request, draft)
    return join_context(draft, _unbound(draft, source, topics), topics_error)


def join_submit(request, draft):
    topics, topics_error = right_topics(request, draft)
    read = read_join(draft, request.POST, topics=topics, kafka=kafka_section(request, draft))
    context = join_context(draft, read, topics_error)
    if not read.ok:
        return context
    if read.join is not None:
        try:
            issues = join_issues(draft, read.join, kafka_connection=kafka_connection_of(request, draft))
        except ApplicationError as exc:
            context["problems"] = [f"Could not check the join against Kafka: {exc.message}"]
            return context
        left_over = place_issues(issues, form=read.form, dedup_form=read.dedup_form, keys=read.keys)
        if issues:
            return join_context(draft, JoinInput(**{**vars(read), "problems": read.problems + left_over}), topics_error)
    had_join = draft.spec.is_set("join") and draft.spec.join is not None
    spec = draft.spec.model_copy(deep=True)
    spec.join = read.join
    if had_join != (read.join is not None):
        spec.sink.unset("columns")  # every field's name changes (`left.x` / `x`): the mapping is proposed again
    data = read.form.cleaned_data
    values = {
        **draft.section(JOIN_SECTION),
        "count": data.get("count") or 20,
        "position": data.get("position") or SPAN,
        "notes": {
            r["path"]: {"nullable": r["nullable"], "manual": r["manual"], "examples": r["examples"]} for r in read.rows
        },
    }
    draft_save_step(draft=draft, step="join", values=values, spec=spec, advance=True)
    return None


def missing_pieces(read: JoinInput) -> list[str]:
    """What keeps the posted join from being built, each part named as the step labels it (the joined topic's
    dedup key, a join key's field, a field's type): what the preview says instead of the rows."""
    pieces: list[str] = []
    for form, where in ((read.form, ""), (read.dedup_form, "Deduplication of the joined topic")):
        for name, errors in form.errors.items():
            label = str(form.fields[name].label) if name in form.fields else ""
            named = ": ".join(part for part in (where, label) if part)
            pieces += [f"{named}: {error}" if named else str(error) for error in errors]
    if read.rows_error:
        pieces.append(read.rows_error)
    for row in read.rows:
        pieces += [f"Field {row.get('path') or '(no name)'}: {error}" for error in row["errors"].values()]
    for number, key in enumerate(read.keys, start=1):
        for side, error in key["errors"].items():
            whose = "the joined topic's" if side == "right" else "this topic's"
            pieces.append(f"Join key {number}, {whose} field: {error}")
    return [*pieces, *read.problems]


def preview_context(draft: WizardDraft, read: JoinInput) -> dict[str, Any]:
    """The preview partial: the joined rows of the two samples, or what keeps the join from being previewed."""
    context: dict[str, Any] = {"checked": True, "sample_words": sample_words(draft.section(JOIN_SECTION))}
    if read.form.is_bound and read.form.is_valid() and read.form.cleaned_data["enabled"] == "off":
        return {**context, "off": True}
    if read.join is None:
        return {**context, "blocked": True, "missing": missing_pieces(read)}
    issues = join_issues(draft, read.join)
    if issues:
        return {**context, "issues": issues}
    rows = preview_rows(draft, read.join)
    columns = list(rows[0]) if rows else []
    return {**context, "rows": [[row[c] for c in columns] for row in rows], "columns": columns, "join": read.join}
