"""Display filters the pages share: JSON, timestamps, numbers, the fields of a form not laid out by hand, and a
message's words apart from the traceback it may carry."""

import json
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import template

from clearflow_spec.failures import last_meaningful_line

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


# Where a message stops being words and becomes a stack trace: Python's, a frame of one, or the JVM's.
_TRACE_START = re.compile(
    r"Traceback \(most recent call last\)|\bFile \"[^\"]+\", line \d+|\n\s*at [\w$.<>]+\(|JVM stacktrace:"
)


def _split_trace(text: str) -> tuple[str, str]:
    match = _TRACE_START.search(text)
    return (text, "") if match is None else (text[: match.start()].strip(), text[match.start() :].strip())


@register.filter
def in_words(value: str | None) -> str:
    """A message without the stack trace it may carry (an error copied from a job's log): the words before it;
    when they end on a colon ("terminated with exception:"), or there are none, the trace's last meaningful line
    ("ValueError: bad") says what the trace ends with."""
    words, trace = _split_trace(str(value or ""))
    if trace and (not words or words.endswith(":")):
        words = f"{words} {last_meaningful_line(trace)}".strip()
    return words


@register.filter
def stack_trace(value: str | None) -> str:
    """The stack trace a message carries ("" when none), for a "technical detail" that opens on demand."""
    return _split_trace(str(value or ""))[1]
