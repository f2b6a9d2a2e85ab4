"""Display filters the pages share: JSON, timestamps, numbers, and the fields of a form not laid out by hand."""

import json
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import template

register = template.Library()


@register.filter
def pretty_json(value):
    """A JSON value, indented for reading (escaped by the template like any text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@register.filter
def short_ts(value):
    """'2026-11-21T20:38:51.753000+00:00' -> '2026-11-21 20:38:51 UTC' (sampled timestamps are UTC)."""
    if not value:
        return ""
    text = str(value)
    return f"{text[:10]} {text[11:19]} UTC" if len(text) >= 19 else text


@register.filter
def fields_except(form, names: str) -> list:
    """The form's fields not named in `names` (space-separated), in form order: a template lays out the fields it
    knows and lists the rest after them, so a connection setting added to the spec's model is never left off."""
    skip = set(names.split())
    return [field for field in form if field.name not in skip]


@register.filter
def number(value: int | float | str | None) -> str:
    """One format for every count, rate and figure on the pages: digits grouped by thousands, at most one decimal,
    rounded half up (12345 -> "12,345", 2700.0 -> "2,700", 2.25 -> "2.3"). The charts use the same rule
    (`ClearFlow.formatNumber`, frontend/js/format.js). Anything else is shown as it is."""
    if value is None or value == "" or isinstance(value, bool):
        return "" if value is None else str(value)
    try:
        rounded = Decimal(str(value)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    except (InvalidOperation, ValueError):
        return str(value)
    if not rounded.is_finite():
        return str(value)
    if rounded == rounded.to_integral_value():
        return f"{int(rounded):,}"
    return f"{rounded:,.1f}"
