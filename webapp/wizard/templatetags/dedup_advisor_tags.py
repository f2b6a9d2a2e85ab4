"""Filters for the dedup advisor's partial."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def thousands(value: int | float | None) -> str:
    """12345 -> "12,345" (django.contrib.humanize is not installed)."""
    if value is None:
        return ""
    return f"{value:,}"
