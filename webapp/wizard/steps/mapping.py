"""Step 7: which field goes into which column, with type checks.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from spark_jobs import spec as specmod
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_save_step
from webapp.wizard.steps.clickhouse import ensure_columns, source_fields
from webapp.wizard.steps.common import NEW_TABLE_TYPES, form_rows


def _column_name(path: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", path)
    return name if re.match(r"^[A-Za-z_]", name) else f"f_{name}"


def _proposed_type(field: dict[str, Any], order_by: list[str]) -> str:
    """The spec module's type for the field; Nullable when it may be missing (never for ORDER BY columns)."""
    base = specmod.default_clickhouse_type(field["type"])
    if field.get("nullable") and field["type"] != "json" and field["path"] not in order_by:
        return f"Nullable({base})"
    return base


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


def mapping_rows(draft: WizardDraft, post: Any = None) -> tuple[list[MappingRow], list[dict[str, Any]], bool]:
    """The mapping rows (stored, posted or auto-mapped by name), the target columns, and whether it is new."""
    ch = draft.section("clickhouse")
    new_table = ch.get("table_mode") != "existing"
    order_by = ch.get("order_by") or []
    columns = ch.get("columns") or []
    fields = source_fields(draft) + [
        {"path": k, "type": v, "nullable": False, "meta": True} for k, v in specmod.KAFKA_METADATA_FIELDS.items()
    ]
    types = {f["path"]: f["type"] for f in fields}
    stored = draft.section("mapping").get("columns")
    rows: list[MappingRow] = []
    if post is not None:
        for raw in form_rows(post, "m", ("field", "column", "type")):
            include = post.get(f"m{raw['index']}-include") == "on" if new_table else bool(raw["column"])
            rows.append(
                MappingRow(
                    raw["index"], raw["field"], types.get(raw["field"], "?"), raw["column"], raw["type"], include
                )
            )
    elif stored is not None:
        by_field = {m["field"]: m for m in stored}
        for i, f in enumerate(fields):
            m = by_field.get(f["path"])
            if new_table:
                rows.append(
                    MappingRow(
                        str(i),
                        f["path"],
                        f["type"],
                        m["column"] if m else _column_name(f["path"]),
                        m["type"] if m else _proposed_type(f, order_by),
                        include=m is not None,
                    )
                )
            else:
                rows.append(MappingRow(str(i), f["path"], f["type"], m["column"] if m else "", m["type"] if m else ""))
    else:
        by_name = {c["name"].lower(): c for c in columns}
        for i, f in enumerate(fields):
            if new_table:
                rows.append(
                    MappingRow(
                        str(i),
                        f["path"],
                        f["type"],
                        _column_name(f["path"]),
                        _proposed_type(f, order_by),
                        include=not f.get("meta"),
                    )
                )
            else:
                match = by_name.get(f["path"].lower()) or by_name.get(_column_name(f["path"]).lower())
                rows.append(
                    MappingRow(
                        str(i),
                        f["path"],
                        f["type"],
                        match["name"] if match else "",
                        match["type"] if match else "",
                        include=match is not None,
                    )
                )
    if not new_table:
        column_types = {c["name"]: c["type"] for c in columns}
        for row in rows:
            row.type = column_types.get(row.column, "") if row.column else ""
    return rows, columns, new_table


def check_mapping(draft: WizardDraft, rows: list[MappingRow], columns: list[dict[str, Any]], new_table: bool):
    """Flag incompatible types, double-mapped columns and required columns left unmapped."""
    problems: list[str] = []
    used: dict[str, str] = {}
    for row in rows:
        if not row.include or not row.column:
            continue
        if new_table:
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", row.column):
                row.error = "Use letters, digits and '_' for the column name, not starting with a digit."
                continue
            type_error = specmod.clickhouse_type_error(row.type)
            if type_error:
                row.error = type_error
                continue
        if row.column in used:
            row.error = f"The column {row.column!r} is already filled from {used[row.column]!r}."
            continue
        used[row.column] = row.field
        if not specmod.field_type_compatible(row.field_type, row.type):
            row.error = f"A {row.field_type} field cannot be written to {row.type}."
    unmapped_required = [c["name"] for c in columns if c.get("required") and c["name"] not in used]
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
    if columns_error:
        problems.insert(0, f"Could not read the table's columns: {columns_error}")
    return _mapping_context(rows, columns, new_table, problems, unmapped)


def _mapping_context(rows, columns, new_table, problems, unmapped) -> dict[str, Any]:
    return {
        "rows": rows,
        "columns": columns,
        "new_table": new_table,
        "problems": problems,
        "unmapped_required": unmapped,
        "type_choices": NEW_TABLE_TYPES,
        "checked": True,
        "metadata_fields": specmod.KAFKA_METADATA_FIELDS,
    }


def mapping_submit(request, draft):
    rows, columns, new_table = mapping_rows(draft, request.POST)
    ok, problems, unmapped = check_mapping(draft, rows, columns, new_table)
    context = _mapping_context(rows, columns, new_table, problems, unmapped)
    if not ok:
        return context
    values = {
        "columns": [{"field": r.field, "column": r.column, "type": r.type} for r in rows if r.include and r.column]
    }
    advance = request.POST.get("action") != "check"
    draft_save_step(draft=draft, step="mapping", values=values, advance=advance)
    if not advance:
        return {**context, "mapping_ok": True, "status": 200}
    return None
