"""Helpers shared by the wizard's steps: forms from stored input, errors onto forms, the draft's fields and connections.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

import re
from typing import Any

from django.http import Http404, HttpRequest
from django.utils.datastructures import MultiValueDict

from clearflow_spec.field_types import FIELD_TYPE_CHOICES as FIELD_TYPE_CHOICES  # re-exported for the steps
from clearflow_spec.field_types import NEW_TABLE_COLUMN_TYPES, field_type_shape, is_nested
from clearflow_spec.nested_types import ARRAY
from clearflow_spec.spec import JOIN_METADATA_FIELDS, JOIN_SIDES, KAFKA_METADATA_FIELDS, JoinSpec, member_paths
from webapp.wizard import forms
from webapp.wizard.connection_kinds import CLICKHOUSE, KAFKA, SCHEMA_REGISTRY, ConnectionKind
from webapp.wizard.models import WizardDraft
from webapp.workspaces.current import current_workspace
from webapp.workspaces.models import Workspace

# The field types and the column types for a new table come from the engine's one table of field types.
NEW_TABLE_TYPES = NEW_TABLE_COLUMN_TYPES


# -- helpers --------------------------------------------------------------------------------------------


def draft_workspace(request: HttpRequest, draft: WizardDraft) -> Workspace:
    """The workspace the draft's pipeline is in (an edited one) or goes to (the header's current workspace)."""
    return draft.pipeline.workspace if draft.pipeline_id else current_workspace(request)


def draft_topics(draft: WizardDraft) -> list[str]:
    """The topics the draft reads: those listed, or those its topic pattern matched when the topics step was
    saved (the steps that read events, the sample, the key advice and the sizing, read these)."""
    if draft.spec.source.topics:
        return list(draft.spec.source.topics)
    if draft.spec.source.topic_pattern:
        return list(draft.section("topics").get("matched") or [])
    return []


def initial_from(source: MultiValueDict | None, form_class: type, prefix: str | None = None) -> dict[str, Any]:
    """Initial values for an unbound form from what was typed before (multi-value fields keep lists)."""
    if not source:
        return {}
    initial: dict[str, Any] = {}
    for name, field in form_class.base_fields.items():
        key = f"{prefix}-{name}" if prefix else name
        if key not in source:
            continue
        if isinstance(field, forms.forms.MultipleChoiceField):
            initial[name] = source.getlist(key)
        else:
            initial[name] = source.get(key)
    return initial


def schema_fields(draft: WizardDraft) -> list[dict[str, Any]]:
    """The spec's `source.fields`, each with the sample step's notes that a spec has no place for: sometimes
    missing (`nullable`), added by hand (`manual`: kept when a new sample is fetched), example values. A field
    without notes (an edited pipeline's) counts as added by hand."""
    notes = draft.section("sample").get("notes") or {}
    fields = []
    for field in draft.spec.source.fields or []:
        note = notes.get(field.path) or {"manual": True}
        fields.append({"nullable": False, "manual": False, "examples": [], **note, **field.model_dump()})
    return fields


def draft_join(draft: WizardDraft) -> JoinSpec | None:
    """The join the join step saved (None: no join, or the step was skipped)."""
    return draft.spec.join if draft.spec.is_set("join") else None


def row_fields(draft: WizardDraft) -> list[dict[str, Any]]:
    """The fields of the rows the later steps (filter, computed fields, table, mapping) work on: the sample's
    fields; with a join, each side's fields named by side (`left.<path>`, `right.<path>`, the spec's names), a left
    join's right fields nullable (they are empty for events nothing matched)."""
    join = draft_join(draft)
    left = schema_fields(draft)
    if join is None:
        return exploded_fields(left, draft.spec.explode)
    notes = draft.section("join").get("notes") or {}
    fields = [{**f, "path": f"{JOIN_SIDES[0]}.{f['path']}"} for f in left]
    for f in join.source.fields:
        note = notes.get(f.path) or {}
        nullable = join.type == "left" or bool(note.get("nullable", True))
        fields.append(
            {"examples": [], **note, "path": f"{JOIN_SIDES[1]}.{f.path}", "type": f.type, "nullable": nullable}
        )
    return fields


def array_fields(fields: list[dict[str, Any]]) -> list[str]:
    """The paths of the fields an explode can name (`array<...>` fields)."""
    found = []
    for f in fields:
        if is_nested(f.get("type") or "string") and field_type_shape(f["type"]).kind == ARRAY:
            found.append(f["path"])
    return found


def exploded_fields(fields: list[dict[str, Any]], explode: str | None) -> list[dict[str, Any]]:
    """The row's fields once `explode` makes the array's element a row: the field is the element, and the members
    of a struct element (to any depth) are fields of their own (`clearflow_spec.spec.member_paths`)."""
    if explode is None or explode not in array_fields(fields):
        return fields
    out = []
    for f in fields:
        if f["path"] != explode:
            out.append(f)
            continue
        element = field_type_shape(f["type"]).elem.ddl()
        out.append({**f, "type": element, "examples": []})
        members = member_paths({explode: element})
        out += [{"path": path, "type": kind, "nullable": True, "examples": []} for path, kind in members.items()]
    return out


def metadata_fields(draft: WizardDraft) -> dict[str, str]:
    """The Kafka metadata a row offers (`_kafka_offset`, ...); with a join, each side's (`left._kafka_offset`)."""
    if draft_join(draft) is None:
        return dict(KAFKA_METADATA_FIELDS)
    return {f"{side}.{name}": kind for side in JOIN_SIDES for name, kind in JOIN_METADATA_FIELDS.items()}


def computed_fields(draft: WizardDraft) -> list[dict[str, Any]]:
    """The spec's `transforms` (computed fields: name, expression, type), as the step's rows."""
    return [t.model_dump() for t in draft.spec.transforms or []]


def _connection_of(request: HttpRequest, draft: WizardDraft, kind: ConnectionKind):
    pk = draft.section(kind.slug).get("connection_id")
    if pk is None:
        return None
    try:
        return kind.get(user=request.user, pk=pk)
    except Http404:  # deleted since: the step asks for a connection again
        return None


def kafka_connection_of(request: HttpRequest, draft: WizardDraft):
    return _connection_of(request, draft, KAFKA)


def clickhouse_connection_of(request: HttpRequest, draft: WizardDraft):
    return _connection_of(request, draft, CLICKHOUSE)


def schema_registry_connection_of(request: HttpRequest, draft: WizardDraft):
    """The registry the sample step chose for Avro or Protobuf events (None for JSON, or when it was deleted)."""
    if draft.spec.source.format not in ("avro", "protobuf"):
        return None
    return _connection_of(request, draft, SCHEMA_REGISTRY)


def sample_form(request: HttpRequest, data: Any = None, **kwargs: Any) -> forms.SampleForm:
    """The sample step's form, its schema registries the user's own."""
    from webapp.connections import selectors as conn_selectors

    registries = conn_selectors.schema_registry_connection_list(user=request.user)
    return forms.SampleForm(data, registries=registries, **kwargs)


def form_rows(post: Any, prefix: str, names: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows posted as `<prefix><n>-<name>`, in the order they appear in the form."""
    pattern = re.compile(rf"^{prefix}(\d+)-{names[0]}$")
    rows = []
    for key in post:
        match = pattern.match(key)
        if not match:
            continue
        index = match.group(1)
        row = {"index": index}
        for name in names:
            row[name] = (post.get(f"{prefix}{index}-{name}") or "").strip()
        rows.append(row)
    return rows
