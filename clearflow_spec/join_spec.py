"""The pipeline spec's `join` section (version 2): a second topic, the right side, joined to the source (the
left side) on keys within a time window, and its checks against both sides' fields.

The engine's side of the join is `spark_jobs.join` (Spark); this module imports no Spark, so the web app and the
client package check a join with it. Readers import these names from `clearflow_spec.spec`, which re-exports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from clearflow_spec.field_types import is_nested
from clearflow_spec.spec_base import (
    JOIN_METADATA_FIELDS,
    STRICT,
    DedupSpec,
    FieldSpec,
    SourceSpec,
    SpecIssue,
    Windowed,
    dedup_issues,
    field_issues,
    source_issues,
    time_field_issues,
)

JoinType = Literal["inner", "left"]
JOIN_SIDES = ("left", "right")  # the prefixes of the joined fields: `left.<path>`, `right.<path>`


class JoinKeySpec(BaseModel):
    model_config = STRICT

    left: str  # a field of `source.fields`
    right: str  # a field of `join.source.fields`


class JoinSpec(Windowed):
    """A second topic (the right side) joined to the source (the left side) on keys, within a time window.

    Each side is deduplicated first (`dedup`, `join.dedup`). The joined row's fields are `left.<path>` and
    `right.<path>` (Kafka metadata too: `right._kafka_offset`). inner: a row per left and right event whose join
    times are within `window` of each other; left: also each left event that nothing matched, with empty right
    fields, once `window` has passed since it arrived. The join time is the Kafka timestamp (ingestion) or a
    datetime field of each side (event). State is kept for `window` of processing time on each side."""

    model_config = STRICT

    source: SourceSpec
    dedup: DedupSpec | None = None
    keys: list[JoinKeySpec] = Field(min_length=1)
    window: str = "30m"
    type: JoinType = "inner"
    time: Literal["ingestion", "event"] = "ingestion"
    left_time_field: str | None = None
    right_time_field: str | None = None

    @model_validator(mode="after")
    def _event_time(self) -> JoinSpec:
        if self.source.topic_pattern is not None:
            raise ValueError("a join's right side lists its topics: topic_pattern is for the pipeline's source")
        if self.time == "event" and not (self.left_time_field and self.right_time_field):
            raise ValueError("time 'event' needs left_time_field and right_time_field")
        return self


def joined_field_types(left: Sequence[FieldSpec], right: Sequence[FieldSpec]) -> dict[str, str]:
    """The names a joined row offers, prefixed by side: `left.<path>`, `left._kafka_topic`, `right.<path>`..."""
    types: dict[str, str] = {}
    for side, fields in zip(JOIN_SIDES, (left, right), strict=True):
        types.update({f"{side}.{f.path}": f.type for f in fields})
        types.update({f"{side}.{name}": kind for name, kind in JOIN_METADATA_FIELDS.items()})
    return types


def join_section_issues(join: JoinSpec, left: dict[str, str], *, version: int) -> list[SpecIssue]:
    """The right side as a source of its own, then the keys (same type on both sides) and the time fields.
    `left`: the left side's field types by path; `version`: the spec's."""
    if version < 2:
        return [SpecIssue("version", "a join needs version 2 (version 1 has no join)")]
    issues = source_issues(join.source, "join.source") + field_issues(join.source.fields, "join.source")
    right = {f.path: f.type for f in join.source.fields}
    if join.dedup is not None:
        issues += dedup_issues(join.dedup, right, "join.dedup", "join.source")
    for i, key in enumerate(join.keys):
        for side, fields, source_path in (("left", left, "source"), ("right", right, "join.source")):
            name = getattr(key, side)
            if name not in fields:
                issues.append(
                    SpecIssue(f"join.keys[{i}].{side}", f"unknown field '{name}'; add it to {source_path}.fields")
                )
            elif fields[name] == "json" or is_nested(fields[name]):
                issues.append(
                    SpecIssue(f"join.keys[{i}].{side}", f"a {fields[name]} field ('{name}') cannot be a join key")
                )
        if key.left in left and key.right in right and left[key.left] != right[key.right]:
            issues.append(
                SpecIssue(
                    f"join.keys[{i}].right",
                    f"key types differ: '{key.right}' is {right[key.right]} on the right, "
                    f"'{key.left}' is {left[key.left]} on the left; join fields of the same type",
                )
            )
    if join.time == "event":
        if join.left_time_field:
            issues += time_field_issues(join.left_time_field, left, "join.left_time_field", "source")
        if join.right_time_field:
            issues += time_field_issues(join.right_time_field, right, "join.right_time_field", "join.source")
    return issues


__all__ = ["JOIN_SIDES", "JoinKeySpec", "JoinSpec", "JoinType", "join_section_issues", "joined_field_types"]
