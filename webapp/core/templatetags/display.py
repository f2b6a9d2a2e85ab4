"""Display filters the pages share: JSON, timestamps, numbers, and the fields of a form not laid out by hand."""

import json

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
def thousands(value: int | float | None) -> str:
    """12345 -> "12,345" (django.contrib.humanize is not installed)."""
    if value is None:
        return ""
    return f"{value:,}"
