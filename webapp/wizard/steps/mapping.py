"""Step 8: which field goes into which column, with type checks.

The proposal and the checks are the pipelines' mapping service (`webapp.pipelines.mapping`), the same the
API's `POST /pipelines/mapping/` answers with; this step adds the form rows and the ORDER BY rule.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from clearflow_spec import spec as specmod
from clearflow_spec.spec import JOIN_SIDES
from webapp.connections.clickhouse_client import ColumnInfo
from webapp.pipelines.mapping import SourceField, check_column, suggest_mapping, writable
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_save_step
from webapp.wizard.steps.clickhouse import ensure_columns, source_fields, stored_columns
from webapp.wizard.steps.common import NEW_TABLE_TYPES, draft_join, form_rows, metadata_fields
from webapp.wizard.steps.fit import accepted_fields, check_mapping_fit, mapping_fit_summary
from webapp.wizard.steps.sample import schema_column_types


@dataclass
class MappingRow:
    index: str
    field: str
    field_type: str
    column: str
    type: str
    include: bool = True
    error: str = ""
    note: str = ""


def _source_fields(draft: WizardDraft) -> list[SourceField]:
    """Every name a column can be filled from: sample fields (with the column type their Avro schema proposes),
    computed fields, then Kafka metadata."""
    schema_types = _schema_column_types(draft)
    if draft_join(draft) is not None:  # the schema is the left side's
        schema_types = {f"{JOIN_SIDES[0]}.{path}": kind for path, kind in schema_types.items()}
    fields = []
    for f in source_fields(draft):
        column_type = schema_types.get(f["path"])
        if column_type is not None and not specmod.field_type_compatible(f["type"], column_type):
            column_type = None  # the field's type was changed by hand: its own default then
        fields.append(SourceField(f["path"], f["type"], bool(f.get("nullable")), column_type))
    return fields + [SourceField(path, kind) for path, kind in metadata_fields(draft).items()]


def _schema_column_types(draft: WizardDraft) -> dict[str, str]:
    """For an Avro source, the column types its schema proposes by path: the pasted schema's, else those of the
    registry's schema that the sample was decoded with."""
    if draft.spec.source.format not in ("avro", "protobuf"):
        return {}
    if draft.spec.source.avro_schema:
        return schema_column_types(draft.spec.source.avro_schema)
    return dict(draft.section("sample").get("column_types") or {})


def mapping_rows(draft: WizardDraft, post: Any = None) -> tuple[list[MappingRow], list[ColumnInfo], bool]:
    """The mapping rows (posted, stored in the spec's `sink.columns`, or proposed by the pipelines' mapping
    service), the existing table's columns, and whether the table is new."""
    new_table = draft.section("clickhouse").get("table_mode", "new") != "existing"
    columns = [] if new_table else stored_columns(draft)
    order_by = draft.section("clickhouse").get("order_by") or []
    fields = _source_fields(draft)
    types = {f.path: f.type for f in fields}
    stored = draft.spec.sink.columns
    rows: list[MappingRow] = []
    if post is not None:
        for raw in form_rows(post, "m", ("field", "column", "type")):
            include = post.get(f"m{raw['index']}-include") == "on" if new_table else bool(raw["column"])
            rows.append(
                MappingRow(
                    raw["index"], raw["field"], types.get(raw["field"], "?"), raw["column"], raw["type"], include
                )
            )
    else:
        proposed = {
            m.field: m for m in suggest_mapping(fields, None if new_table else columns, order_by=order_by).columns
        }
        chosen = {m.field: m for m in stored} if stored is not None else None
        metadata = metadata_fields(draft)
        for i, f in enumerate(fields):
            meta = f.path in metadata
            mapped = proposed.get(f.path) if chosen is None else chosen.get(f.path)
            if mapped is None and new_table:
                mapped = proposed.get(f.path)  # shown with its proposed column, not written
                include = False
            else:
                include = mapped is not None and (chosen is not None or not new_table or not meta)
            column = mapped.column if mapped else ""  # a ColumnMapping (proposed) or the spec's ColumnSpec
            kind = mapped.type if mapped else ""
            rows.append(MappingRow(str(i), f.path, f.type, column, kind, include=include))
    if not new_table:
        column_types = {c.name: c.type for c in columns}
        for row in rows:
            row.type = column_types.get(row.column, "") if row.column else ""
    return rows, columns, new_table


def _problem_text(problem: str) -> str:
    return problem[:1].upper() + problem[1:] + "."


def check_mapping(draft: WizardDraft, rows: list[MappingRow], columns: list[ColumnInfo], new_table: bool):
    """Flag what cannot be written (the pipelines' mapping rules), double-mapped columns, and required
    columns left unmapped."""
    problems: list[str] = []
    used: dict[str, str] = {}
    by_name = {c.name: c for c in columns}
    nullable = {f.path: f.nullable for f in _source_fields(draft)}
    for row in rows:
        if not row.include or not row.column:
            continue
        if new_table:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", row.column):
                row.error = "Use letters, digits and '_' for the column name, not starting with a digit."
                continue
            type_error = specmod.clickhouse_type_error(row.type)
            if type_error:
                row.error = type_error
                continue
            parsed = specmod.parse_clickhouse_type(row.type)
            column = ColumnInfo(row.column, row.type, parsed.nullable, "", "", False, "")
        else:
            column = by_name.get(row.column)
            if column is None:
                row.error = f"The table has no column {row.column!r}."
                continue
        if row.column in used:
            row.error = f"The column {row.column!r} is already filled from {used[row.column]!r}."
            continue
        used[row.column] = row.field
        compatible, problem = check_column(
            SourceField(row.field, row.field_type, nullable.get(row.field, False)), column
        )
        if not compatible:
            row.error = _problem_text(problem)
        elif problem:
            row.note = _problem_text(problem)
    unmapped_required = [c.name for c in columns if c.required and c.name not in used]
    if unmapped_required:
        problems.append(
            "These columns need a value (not Nullable, no default) but no field is mapped to them: "
            + ", ".join(unmapped_required)
        )
    if not used:
        problems.append("Map at least one field to a column.")
    if new_table:
        order_by = draft.section("clickhouse").get("order_by", [])
        mapped_fields = {r.field: r for r in rows if r.include and r.column}
        for path in order_by:
            row = mapped_fields.get(path)
            if row is None:
                problems.append(f"ORDER BY field {path!r} must be mapped to a column.")
            elif row.type.startswith("Nullable("):
                row.error = row.error or "This column is in ORDER BY and cannot be Nullable."
    ok = not problems and not any(r.error for r in rows)
    return ok, problems, unmapped_required


def mapping_show(request, draft, source):
    columns_error = ensure_columns(request, draft)
    rows, columns, new_table = mapping_rows(draft, source)
    _ok, problems, unmapped = check_mapping(draft, rows, columns, new_table)
    check_mapping_fit(draft, rows, accepted_fields(draft, source, rows))
    if columns_error:
        problems.insert(0, f"Could not read the table's columns: {columns_error}")
    return _mapping_context(draft, rows, columns, new_table, problems, unmapped)


def _mapping_context(draft, rows, columns, new_table, problems, unmapped) -> dict[str, Any]:
    return {
        "rows": rows,
        "columns": [c for c in columns if writable(c)],  # ClickHouse computes the others
        "new_table": new_table,
        "problems": problems,
        "unmapped_required": unmapped,
        "type_choices": NEW_TABLE_TYPES,
        "checked": True,
        "metadata_fields": metadata_fields(draft),
        **mapping_fit_summary(rows),
    }


def mapping_submit(request, draft):
    rows, columns, new_table = mapping_rows(draft, request.POST)
    ok, problems, unmapped = check_mapping(draft, rows, columns, new_table)
    accepted = accepted_fields(draft, request.POST, rows)
    fit_problems = check_mapping_fit(draft, rows, accepted)
    context = _mapping_context(draft, rows, columns, new_table, problems + (fit_problems if ok else []), unmapped)
    if not ok or fit_problems:
        return context
    spec = draft.spec.model_copy(deep=True)
    sink = spec.sink
    try:
        sink.columns = [
            specmod.ColumnSpec(field=r.field, column=r.column, type=r.type) for r in rows if r.include and r.column
        ]
    except PydanticValidationError as exc:  # a column type the spec does not read: say so, keep what was typed
        context["problems"] = [*context["problems"], *(_problem_text(str(e["msg"])) for e in exc.errors())]
        return context
    if sink.create_table is not False:
        # The ORDER BY is chosen as fields on the table step; the spec names their columns.
        column_of = {c.field: c.column for c in sink.columns}
        order_by = draft.section("clickhouse").get("order_by") or []
        sink.order_by = [column_of[path] for path in order_by if path in column_of]
    # Which fields the user accepted dead letters for: no spec field, the wizard's own note.
    values = {"accept_dead_letters": sorted({r.field for r in rows if r.include and r.column and r.field in accepted})}
    advance = request.POST.get("action") != "check"
    draft_save_step(draft=draft, step="mapping", values=values, spec=spec, advance=advance)
    if not advance:
        return {**context, "mapping_ok": True, "status": 200}
    return None
