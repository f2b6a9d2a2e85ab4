"""A join's preview and its sample check, on sampled events in Python (no Spark): what the wizard's join step
shows and what `POST /pipelines/validate/` with `check_live` refuses.

The preview joins the two samples as the engine would (same keys, join times within the window; a left join
also shows the left events nothing matched, with empty right fields, as they would be written once the window
passed). Each row is a dict of the joined row's names (`left.order_id`, `right.paid`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from clearflow_spec.spec import JOIN_SIDES, PipelineSpec, SpecIssue
from webapp.connections.kafka_client import SampledEvent

PREVIEW_ROWS = 20
_MISSING = object()


def _value(event: Any, path: str) -> Any:
    node = event
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _join_time(event: SampledEvent, field: str | None) -> datetime | None:
    if field is None:
        return event.timestamp
    value = _value(event.value, field)
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _key(event: SampledEvent, paths: Sequence[str]) -> tuple[str, ...] | None:
    values = [_value(event.value, path) for path in paths]
    if any(v is _MISSING or v is None for v in values):
        return None
    return tuple(str(v) for v in values)


def _row(side: str, fields: Sequence[str], event: SampledEvent | None) -> dict[str, Any]:
    row = {}
    for path in fields:
        value = None if event is None else _value(event.value, path)
        row[f"{side}.{path}"] = None if value is _MISSING else value
    return row


def join_preview(
    spec: PipelineSpec, left: Sequence[SampledEvent], right: Sequence[SampledEvent], *, limit: int = PREVIEW_ROWS
) -> list[dict[str, Any]]:
    """Up to `limit` joined rows of the two samples (JSON events only), left events in sample order."""
    join = spec.join
    assert join is not None
    left_fields = [f.path for f in spec.source.fields]
    right_fields = [f.path for f in join.source.fields]
    event_time = join.time == "event"
    left_time = join.left_time_field if event_time else None
    right_time = join.right_time_field if event_time else None
    by_key: dict[tuple[str, ...], list[SampledEvent]] = {}
    for event in right:
        key = _key(event, [k.right for k in join.keys]) if event.is_json else None
        if key is not None:
            by_key.setdefault(key, []).append(event)
    rows: list[dict[str, Any]] = []
    for event in left:
        key = _key(event, [k.left for k in join.keys]) if event.is_json else None
        if key is None:
            continue
        when = _join_time(event, left_time)
        matched = False
        for other in by_key.get(key, []):
            other_when = _join_time(other, right_time)
            if (
                when is not None
                and other_when is not None
                and abs((when - other_when).total_seconds()) > join.window_seconds
            ):
                continue
            matched = True
            rows.append({**_row(JOIN_SIDES[0], left_fields, event), **_row(JOIN_SIDES[1], right_fields, other)})
        if not matched and join.type == "left":
            rows.append({**_row(JOIN_SIDES[0], left_fields, event), **_row(JOIN_SIDES[1], right_fields, None)})
        if len(rows) >= limit:
            break
    return rows[:limit]


def right_sample_issues(spec: PipelineSpec, right: Sequence[SampledEvent]) -> list[SpecIssue]:
    """A right side without a usable event in its sample: nothing to check the join's fields and keys against."""
    join = spec.join
    assert join is not None
    if any(event.is_json for event in right):
        return []
    topics = ", ".join(f"'{t}'" for t in join.source.topics)
    return [
        SpecIssue(
            "join.source.topics",
            f"no events in the sample of {topics}: the join's fields and keys cannot be checked; "
            "produce some events to the topic first, or pick another topic",
        )
    ]


__all__ = ["PREVIEW_ROWS", "join_preview", "right_sample_issues"]
