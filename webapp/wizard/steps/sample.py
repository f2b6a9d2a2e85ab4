"""Step 3: a sample of real events and the schema inferred from it, editable.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError as PydanticValidationError

from spark_jobs import spec as specmod
from webapp.connections import selectors as conn_selectors
from webapp.wizard import forms
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_save_step
from webapp.wizard.steps.common import FIELD_TYPE_CHOICES, form_rows, initial_from, schema_fields


def field_rows_from(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "index": str(i),
            "path": f.get("path", ""),
            "type": f.get("type", "string"),
            "nullable": bool(f.get("nullable")),
            "examples": f.get("examples", []),
            "manual": bool(f.get("manual")),
            "errors": {},
        }
        for i, f in enumerate(fields)
    ]


def parse_field_rows(post: Any, known: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Schema rows as posted; `known` (the stored fields) gives back each path's example values."""
    examples: dict[str, list[Any]] = {}
    for known_field in known or []:
        if known_field.get("examples"):
            examples.setdefault(known_field.get("path"), known_field["examples"])
    rows = form_rows(post, "f", ("path", "type", "manual"))
    for row in rows:
        row["nullable"] = post.get(f"f{row['index']}-nullable") == "on"
        row["manual"] = row["manual"] == "1"
        row["examples"] = examples.get(row["path"], [])
        row["errors"] = {}
    return rows


def validate_field_rows(rows: list[dict[str, Any]]) -> bool:
    ok = True
    seen: set[str] = set()
    for row in rows:
        try:
            specmod.FieldSpec(path=row["path"], type=row["type"])
        except PydanticValidationError as exc:
            for error in exc.errors():
                loc = error["loc"][0] if error["loc"] else "path"
                row["errors"][loc] = str(error["msg"]).removeprefix("Value error, ")
            ok = False
            continue
        if row["path"] in seen:
            row["errors"]["path"] = f"The field {row['path']!r} is listed twice."
            ok = False
        seen.add(row["path"])
    return ok


def _known_fields(draft: WizardDraft) -> list[dict[str, Any]]:
    """Stored fields plus what the stored sample shows (for the example values next to each field)."""
    values = [e.get("value") for e in draft.section("sample").get("events", [])]
    inferred = (
        [
            {"path": f.path, "examples": [_example(e) for e in f.examples]}
            for f in conn_selectors.schema_infer(values=values)
        ]
        if values
        else []
    )
    return inferred + schema_fields(draft)


def sample_show(request, draft, source):
    section = draft.section("sample")
    if source:
        form = forms.SampleForm(initial=initial_from(source, forms.SampleForm))
        rows = parse_field_rows(source, _known_fields(draft))
    else:
        form = forms.SampleForm(initial={k: section[k] for k in ("count", "position") if k in section})
        rows = field_rows_from(schema_fields(draft))
    return _sample_context(draft, form, rows)


def _sample_context(draft: WizardDraft, form: forms.SampleForm, rows: list[dict[str, Any]]) -> dict[str, Any]:
    section = draft.section("sample")
    return {
        "form": form,
        "rows": rows,
        "events": section.get("events", []),
        "field_types": FIELD_TYPE_CHOICES,
        "fetched_at": section.get("fetched_at"),
        "topics": draft.spec.source.topics or [],
    }


def sample_submit(request, draft):
    section = draft.section("sample")
    form = forms.SampleForm(request.POST)
    rows = parse_field_rows(request.POST, _known_fields(draft))
    context = _sample_context(draft, form, rows)
    valid = form.is_valid()
    if not rows:
        context["rows_error"] = "Add at least one field: fetch a sample, or add the fields by hand."
        valid = False
    if not validate_field_rows(rows) or not valid:
        return context
    values = {
        **section,
        "count": form.cleaned_data["count"],
        "position": form.cleaned_data["position"],
        "notes": {
            r["path"]: {"nullable": r["nullable"], "manual": r["manual"], "examples": r["examples"]} for r in rows
        },
    }
    spec = draft.spec.model_copy(deep=True)
    spec.source.fields = [specmod.FieldSpec(path=r["path"], type=r["type"]) for r in rows]
    draft_save_step(draft=draft, step="sample", values=values, spec=spec, advance=True)
    return None


MAX_STORED_SAMPLE_BYTES = 1_000_000


def events_to_store(events: list[Any]) -> tuple[list[dict[str, Any]], bool]:
    """The sampled events as draft data, up to about 1 MB of event values; and whether some were left out."""
    stored, total = [], 0
    for event in events:
        total += event.size
        if stored and total > MAX_STORED_SAMPLE_BYTES:
            return stored, True
        stored.append(event_to_json(event))
    return stored, False


def event_to_json(event: Any) -> dict[str, Any]:
    """A sampled event as JSON-able draft data."""
    return {
        "topic": event.topic,
        "partition": event.partition,
        "offset": event.offset,
        "timestamp": event.timestamp.isoformat() if event.timestamp else None,
        "key": event.key,
        "value": event.value,
        "is_json": event.is_json,
        "size": event.size,
    }


def inferred_rows(values: list[Any], keep: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Schema rows from a fresh sample; fields added by hand (and their types) are kept."""
    inferred = conn_selectors.schema_infer(values=values)
    fields = [
        {
            "path": f.path,
            "type": f.type,
            "nullable": f.nullable,
            "manual": False,
            "examples": [_example(e) for e in f.examples],
        }
        for f in inferred
    ]
    known = {f["path"] for f in fields}
    for row in keep:
        if row.get("manual") and row.get("path") and row["path"] not in known:
            fields.append(
                {
                    "path": row["path"],
                    "type": row["type"],
                    "nullable": row.get("nullable", True),
                    "manual": True,
                    "examples": [],
                }
            )
    return field_rows_from(fields)


def _example(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "…"
