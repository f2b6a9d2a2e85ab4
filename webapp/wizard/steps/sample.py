"""Step 3: a sample of real events and the schema inferred from it, editable.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError as PydanticValidationError

from clearflow_spec import spec as specmod
from webapp.connections import selectors as conn_selectors
from webapp.wizard import forms
from webapp.wizard.connection_kinds import SCHEMA_REGISTRY
from webapp.wizard.forms import REGISTRY_FORMATS
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_save_step, draft_update_section
from webapp.wizard.steps.common import (
    FIELD_TYPE_CHOICES,
    draft_topics,
    form_rows,
    initial_from,
    sample_form,
    schema_fields,
)


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


def parse_field_rows(post: Any, known: list[dict[str, Any]] | None = None, prefix: str = "f") -> list[dict[str, Any]]:
    """Schema rows as posted (`<prefix><n>-path`, ...; the join step's right side uses "r"); `known` (the stored
    fields) gives back each path's example values."""
    examples: dict[str, list[Any]] = {}
    for known_field in known or []:
        if known_field.get("examples"):
            examples.setdefault(known_field.get("path"), known_field["examples"])
    rows = form_rows(post, prefix, ("path", "type", "manual"))
    for row in rows:
        row["nullable"] = post.get(f"{prefix}{row['index']}-nullable") == "on"
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
    return sample_examples(draft.section("sample").get("events", [])) + schema_fields(draft)


def sample_examples(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each field path of stored sampled events with its example values."""
    values = [e.get("value") for e in events]
    if not values:
        return []
    return [
        {"path": f.path, "examples": [_example(e) for e in f.examples]}
        for f in conn_selectors.schema_infer(values=values)
    ]


def format_initial(draft: WizardDraft) -> dict[str, Any]:
    """The format and schema registry the draft has (an edited pipeline's, or chosen before)."""
    return {
        "format": draft.spec.source.format or "json",
        "schema_registry": draft.section(SCHEMA_REGISTRY.slug).get("connection_id"),
    }


def sample_show(request, draft, source):
    section = draft.section("sample")
    if source:
        form = sample_form(request, initial=initial_from(source, forms.SampleForm))
        rows = parse_field_rows(source, _known_fields(draft))
    else:
        initial = {k: section[k] for k in ("count", "position") if k in section}
        form = sample_form(request, initial={**initial, **format_initial(draft)})
        rows = field_rows_from(schema_fields(draft))
    return _sample_context(draft, form, rows)


def _sample_context(draft: WizardDraft, form: forms.SampleForm, rows: list[dict[str, Any]]) -> dict[str, Any]:
    section = draft.section("sample")
    return {
        "form": form,
        "rows": rows,
        "events": section.get("events", []),
        "schema_versions": section.get("schema_versions", []),
        "field_types": FIELD_TYPE_CHOICES,
        "fetched_at": section.get("fetched_at"),
        "topics": draft_topics(draft),
    }


def save_format(draft: WizardDraft, form: forms.SampleForm) -> None:
    """The chosen format into the spec (`source.format`) and the registry into the draft (its connection)."""
    registry = form.cleaned_data.get("schema_registry") if form.cleaned_data.get("format") in REGISTRY_FORMATS else None
    chosen = form.cleaned_data["format"]

    def set_format(spec: Any) -> None:
        spec.source.format = chosen

    draft_update_section(
        draft=draft,
        step=SCHEMA_REGISTRY.slug,
        changes={"connection_id": registry.pk if registry else None},
        spec_edit=set_format,
    )


def sample_submit(request, draft):
    section = draft.section("sample")
    form = sample_form(request, request.POST)
    rows = parse_field_rows(request.POST, _known_fields(draft))
    context = _sample_context(draft, form, rows)
    valid = form.is_valid()
    if not rows:
        context["rows_error"] = "Add at least one field: fetch a sample, or add the fields by hand."
        valid = False
    if not validate_field_rows(rows) or not valid:
        return context
    save_format(draft, form)
    section = draft.section("sample")
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
        "value": _without_nul(event.value),
        "is_json": event.is_json,
        "size": event.size,
        "schema_id": event.schema_id,
        "decode_error": event.decode_error,
    }


def _without_nul(value: Any) -> Any:
    """`value` with NUL characters shown as "␀": PostgreSQL's JSON cannot hold them, and binary values (Avro read
    as text) are full of them."""
    if isinstance(value, str):
        return value.replace("\x00", "\u2400")
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    return value


def looks_like_avro(events: list[Any]) -> bool:
    """Most sampled values start as the Confluent wire format does (magic byte 0, then a schema id)."""
    from clearflow_spec.avro_schema import wire_schema_id

    framed = sum(1 for event in events if wire_schema_id(event.raw) is not None)
    return framed * 2 > len(events)


def inferred_rows(
    values: list[Any], keep: list[dict[str, Any]], avro_schema: str | None = None
) -> list[dict[str, Any]]:
    """Schema rows from a fresh sample (from the Avro schema when given); fields added by hand are kept."""
    inferred = conn_selectors.schema_infer(values=values, avro_schema=avro_schema)
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


def schema_column_types(avro_schema: str | None) -> dict[str, str]:
    """The column type the Avro schema proposes for each field path (`clearflow_spec.avro_schema`: Decimal(P, S),
    DateTime64(3, 'UTC'), Date, UUID, LowCardinality(String), Nullable for a union with null); kept with the sample
    so that the mapping step proposes them for a new table. {} without a schema, or for one that does not read."""
    from clearflow_spec.avro_schema import AvroSchemaError
    from clearflow_spec.proto_parser import ProtobufSchemaError
    from clearflow_spec.protobuf_schema import registered_schema_fields

    if not avro_schema:
        return {}
    try:  # a Protobuf source's registered .proto reads the same way
        return {field.path: field.clickhouse_type for field in registered_schema_fields(avro_schema)}
    except (AvroSchemaError, ProtobufSchemaError):
        return {}


def _example(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "…"
