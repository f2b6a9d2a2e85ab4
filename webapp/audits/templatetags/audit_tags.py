"""`{{ seconds|window_words }}`: 3600 -> "the last hour", 21600 -> "the last 6 hours"."""

from __future__ import annotations

from django import template

register = template.Library()

_UNITS = ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second"))


@register.filter
def window_words(seconds: int | None) -> str:
    if not seconds:
        return ""
    for size, name in _UNITS:
        if seconds % size == 0:
            count = seconds // size
            return f"the last {name}" if count == 1 else f"the last {count} {name}s"
    return f"the last {seconds} seconds"  # pragma: no cover - the loop ends at 1 second
