"""What the events carry that the pipeline does not read, and what a schema change does to the mapping.
No Spark, no Django: the web app's pipeline page and API call `field_changes` with the pipeline's spec, the
schemas of the Avro writer schema ids, and the pipeline's metrics records (`spark_jobs.metrics`, oldest first).

- new: a field of a writer schema the events used (Avro), or a JSON key found in the sampled events, that no
  `source.fields` path covers. Worded: "new field `coupon` (string) seen in 1,204 events since 10:02".
- removed: a field the pipeline reads that the newest writer schema in use lacks: what its column gets.
- retyped: a field whose type in the newest schema is not the pipeline's: what happens to its values.
Avro counts are exact (events per schema id); JSON counts are estimated from the sample ("about").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from clearflow_spec.avro_schema import SchemaField
from clearflow_spec.field_types import is_nested
from clearflow_spec.limits import LimitError
from clearflow_spec.protobuf_schema import registered_schema_fields
from clearflow_spec.protocol import JSON_SAMPLE_EVERY
from clearflow_spec.spec import PipelineSpec

ChangeKind = Literal["new", "removed", "retyped"]


@dataclass(frozen=True)
class FieldChange:
    kind: ChangeKind
    path: str
    field_type: str | None  # new: the field type to read it as; retyped: the type the schema has now
    schema_type: str | None  # what the schema says ("string or null", "decimal(10, 2)"); None for JSON keys
    clickhouse_type: str | None  # new: the column type proposed for it
    events: int  # events seen carrying it (new), or written with the schema that changed it
    estimated: bool  # counted from the JSON sample
    since: str | None  # ISO time of the first batch that had it
    schema_id: int | None  # the Avro writer schema id where it appears or changed
    effect: str  # what it does to the mapping, in words

    def message(self) -> str:
        count = f"{'about ' if self.estimated else ''}{self.events:,} events"
        since = f" since {_clock(self.since)}" if self.since else ""
        typed = f" ({self.schema_type or self.field_type})" if (self.schema_type or self.field_type) else ""
        if self.kind == "new":
            return f"new field `{self.path}`{typed} seen in {count}{since}"
        if self.kind == "removed":
            return f"field `{self.path}` is gone from schema id {self.schema_id} ({count}{since}): {self.effect}"
        where = f"schema id {self.schema_id} ({count}{since})"
        return f"field `{self.path}` is now {self.schema_type} in {where}: {self.effect}"


def _clock(timestamp: str) -> str:
    """ "2026-11-25T10:02:13.000Z" -> "10:02" (UTC, as the metrics are stamped)."""
    return timestamp[11:16] if len(timestamp) >= 16 else timestamp


def _covered(path: str, spec: PipelineSpec) -> bool:
    """Read by the pipeline: a field path, or inside a field read whole (a json field)."""
    for field in spec.source.fields:
        read_whole = field.type == "json" or is_nested(field.type)  # its keys are inside its value
        if path == field.path or (read_whole and path.startswith(field.path + ".")):
            return True
        if field.path.startswith(path + "."):  # a parent object of a field the pipeline reads
            return True
    return False


def _first_seen(records: Sequence[Mapping[str, Any]], key: str) -> dict[str, tuple[int, str | None]]:
    """{name: (total, first timestamp)} over the records' `key` mapping of name -> count."""
    seen: dict[str, tuple[int, str | None]] = {}
    for record in records:
        for name, count in (record.get(key) or {}).items():
            if int(count) <= 0:
                continue
            total, since = seen.get(name, (0, None))
            seen[name] = (total + int(count), since or record.get("timestamp"))
    return seen


def field_changes(
    spec: PipelineSpec, schemas_by_id: Mapping[int, str], records: Sequence[Mapping[str, Any]]
) -> list[FieldChange]:
    """The changes the records show (see the module's doc); `schemas_by_id` is needed for Avro only."""
    if spec.source.format in ("avro", "protobuf"):  # both: fields by writer schema id
        return _avro_changes(spec, schemas_by_id, records)
    return _json_changes(spec, records)


def _avro_changes(
    spec: PipelineSpec, schemas_by_id: Mapping[int, str], records: Sequence[Mapping[str, Any]]
) -> list[FieldChange]:
    seen = {int(sid): value for sid, value in _first_seen(records, "events_by_schema_id").items()}
    fields_of: dict[int, dict[str, SchemaField]] = {}
    for sid in seen:
        if sid in schemas_by_id:
            try:
                fields_of[sid] = {f.path: f for f in registered_schema_fields(schemas_by_id[sid])}
            except LimitError:  # a schema over a cap (limits.SCHEMA_FIELDS): the job refuses it; nothing to compare
                continue
    changes: dict[str, FieldChange] = {}
    for sid in sorted(fields_of):
        events, since = seen[sid]
        for path, found in fields_of[sid].items():
            if _covered(path, spec):
                continue
            earlier = changes.get(path)
            changes[path] = FieldChange(
                kind="new",
                path=path,
                field_type=found.type,
                schema_type=found.describe(),
                clickhouse_type=found.clickhouse_type,
                events=events + (earlier.events if earlier else 0),
                estimated=False,
                since=min(filter(None, [since, earlier.since if earlier else None]), default=None),
                schema_id=earlier.schema_id if earlier else sid,
                effect="not read: map it to a column to keep it",
            )
    result = list(changes.values())
    newest = _newest_schema_id(records, fields_of)
    if newest is not None:
        events, since = seen[newest]
        result += _mapping_effects(spec, newest, fields_of[newest], events, since)
    return result


def _newest_schema_id(records: Sequence[Mapping[str, Any]], fields_of: Mapping[int, Any]) -> int | None:
    for record in reversed(records):
        used = [int(sid) for sid, count in (record.get("events_by_schema_id") or {}).items() if int(count) > 0]
        used = [sid for sid in used if sid in fields_of]
        if used:
            return max(used)
    return None


def _mapping_effects(
    spec: PipelineSpec, sid: int, fields: Mapping[str, SchemaField], events: int, since: str | None
) -> list[FieldChange]:
    columns = {c.field: c for c in spec.sink.columns}
    keys = set(spec.dedup.keys) if spec.dedup else set()
    out = []
    for field in spec.source.fields:
        found = fields.get(field.path)
        column = columns.get(field.path)
        if found is None:
            if field.path in keys:
                effect = "events without it are dead letters (a dedup key is missing)"
            elif column is not None:
                nullable = column.clickhouse_type.nullable
                effect = f"column `{column.column}` gets {'NULL' if nullable else 'its default value'} for them"
            else:
                effect = "the pipeline reads NULL for it"
            out.append(FieldChange("removed", field.path, None, None, None, events, False, since, sid, effect))
        elif found.type != field.type and field.type not in ("string", "json") and found.type != "json":
            effect = f"values that do not convert to {field.type} are dead letters"
            out.append(
                FieldChange(
                    "retyped", field.path, found.type, found.describe(), None, events, False, since, sid, effect
                )
            )
    return out


def _json_changes(spec: PipelineSpec, records: Sequence[Mapping[str, Any]]) -> list[FieldChange]:
    first: dict[str, str | None] = {}
    sampled_with = 0
    for record in records:
        keys = [key for key in record.get("unmapped_keys") or [] if not _covered(key, spec)]
        for key in keys:
            first.setdefault(key, record.get("timestamp"))
        if keys:
            sampled_with += int(record.get("sampled_with_unmapped") or 0) * int(
                record.get("sample_every") or JSON_SAMPLE_EVERY
            )
    return [
        FieldChange("new", key, None, None, None, sampled_with, True, since, None, "not read: add it to the fields")
        for key, since in first.items()
    ]
