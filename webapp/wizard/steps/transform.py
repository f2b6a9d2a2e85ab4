"""Step 6: optional filter and computed fields, checked by the spec's expression rules.

See the package docstring of `webapp.wizard.steps` for the show/submit contract."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from clearflow_spec import spec as specmod
from webapp.wizard import forms, transform_preview
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_save_step
from webapp.wizard.steps.common import (
    FIELD_TYPE_CHOICES,
    array_fields,
    computed_fields,
    draft_join,
    exploded_fields,
    form_rows,
    metadata_fields,
    row_fields,
    schema_fields,
)


def expression_names(draft: WizardDraft) -> list[str]:
    """The names an expression may use: the row's fields (with a join, named by side) and Kafka metadata."""
    return [f["path"] for f in row_fields(draft)] + list(metadata_fields(draft))


def _checked_names(draft: WizardDraft, explode: str | None = None) -> list[str]:
    """The names the spec's validation gives `expression_issues`: the fields (an exploded array's element's
    members too); with a join, every joined name (metadata included), as `clearflow_spec.spec` does."""
    if draft_join(draft) is None:
        return [f["path"] for f in exploded_fields(schema_fields(draft), explode)]
    return expression_names(draft)


def _explodable(draft: WizardDraft) -> list[str]:
    """The array fields an explode may name (none with a join)."""
    return [] if draft_join(draft) is not None else array_fields(schema_fields(draft))


def _position(message: str, expression: str) -> dict[str, Any] | None:
    """Line and column from a spec error such as 'syntax error at line 1, column 7 ...' for a caret."""
    match = re.search(r"line (\d+), column (\d+)", message)
    if not match:
        return None
    line, column = int(match.group(1)), int(match.group(2))
    lines = expression.splitlines() or [""]
    if not 1 <= line <= len(lines):
        return None
    text = lines[line - 1]
    column = max(1, min(column, len(text) + 1))
    return {"line": line, "column": column, "text": text, "caret": " " * (column - 1) + "^"}


def check_transform(draft: WizardDraft, post: Any) -> dict[str, Any]:
    """Check the filter and the computed fields by the spec's own rules (`clearflow_spec.spec.expression_issues`,
    what the pipelines service's validation runs); errors carry their position when known."""
    form = forms.TransformForm(post, array_fields=_explodable(draft))
    rows = form_rows(post, "c", ("name", "expression", "type"))
    ok = form.is_valid()
    explode = (form.cleaned_data.get("explode") or None) if ok else None
    names = [f["path"] for f in exploded_fields(row_fields(draft), explode)] + list(metadata_fields(draft))
    for row in rows:
        row["errors"] = {}
        if not row["name"] and not row["expression"]:
            row["empty"] = True
            continue
        try:
            specmod.TransformSpec(name=row["name"], expression=row["expression"] or " ", type=row["type"])
        except PydanticValidationError as exc:
            for error in exc.errors():
                loc = error["loc"][0] if error["loc"] else "name"
                row["errors"].setdefault(loc, str(error["msg"]).removeprefix("Value error, "))
    rows = [r for r in rows if not r.get("empty")]
    if ok:
        issues = specmod.expression_issues(
            _checked_names(draft, explode),
            form.cleaned_data["filter"],
            [(row["name"], row["expression"]) for row in rows],
        )
        for issue in issues:
            if issue.path == "filter":
                form.add_error("filter", issue.message)
                continue
            match = re.fullmatch(r"transforms\[(\d+)\]\.(name|expression)", issue.path)
            if match:
                row = rows[int(match.group(1))]
                row["errors"].setdefault(match.group(2), issue.message)
                if match.group(2) == "expression":
                    row["position"] = _position(issue.message, row["expression"])
    filter_position = None
    if form.errors.get("filter"):
        filter_position = _position(form.errors["filter"][0], post.get("filter", ""))
        ok = False
    if any(row["errors"] for row in rows):
        ok = False
    tried = None
    if ok and draft_join(draft) is None:  # with a join the row is both sides': the sample holds one
        events = draft.section("sample").get("events", [])
        tried = transform_preview.preview(
            [e.get("value") for e in events if not e.get("decode_error")],
            form.cleaned_data["filter"],
            [(row["name"], row["expression"]) for row in rows],
        )
    return {
        "preview": tried,
        "form": form,
        "rows": rows,
        "ok": ok,
        "filter_position": filter_position,
        "names": names,
        "field_types": FIELD_TYPE_CHOICES,
    }


def transform_show(request, draft, source):
    if source:
        context = check_transform(draft, source)
        context["checked"] = False
        return context
    form = forms.TransformForm(
        initial={"filter": draft.spec.filter or "", "explode": draft.spec.explode or ""},
        array_fields=_explodable(draft),
    )
    rows = [{"index": str(i), **c, "errors": {}} for i, c in enumerate(computed_fields(draft))]
    return {"form": form, "rows": rows, "names": expression_names(draft), "field_types": FIELD_TYPE_CHOICES}


def transform_submit(request, draft):
    context = check_transform(draft, request.POST)
    context["checked"] = True
    if not context["ok"]:
        return context
    spec = draft.spec.model_copy(deep=True)
    spec.filter = context["form"].cleaned_data["filter"].strip() or None
    spec.explode = context["form"].cleaned_data.get("explode") or None
    spec.transforms = [
        specmod.TransformSpec(name=r["name"], expression=r["expression"], type=r["type"]) for r in context["rows"]
    ]
    draft_save_step(draft=draft, step="transform", spec=spec, advance=True)
    return None
