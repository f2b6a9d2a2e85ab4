"""Filling a column added for a new field with the values of the rows written before it existed.

When a new field shows in the events (`webapp.pipelines.schema_changes`), the rows already written from the events
that carry it have no column for it; once the column is added they hold NULL (or the type's default). Nothing is
lost while the events are still in Kafka: they are read again and the values set on their rows.

- **Which rows.** Those written since the batch where the field first showed (`_cf_ingested_at`, which every table
  the engine creates carries); the offer counts them in ClickHouse (`rows_since`).
- **Which events.** From the end offsets of the batch before that one (the metrics history keeps them per batch)
  to the topics' end as they are once the new version runs, so the old version's last batches are covered too.
  Without that batch in the history, from the oldest event the topic keeps. Offsets the topic no longer keeps
  (retention) are named, and their rows stay as they are.
- **A row's event.** The row and its event share the dedup key: the stream wrote one row per key within the
  window, the first event's. So the first event read per key gives the value. Without a dedup key a row cannot be
  matched to its event, and nothing is filled.
- **Exactly once.** Nothing is inserted into the pipeline's table: one `ALTER TABLE … UPDATE` (a mutation) sets
  the column on the rows whose key was read and whose column still holds NULL (or the default). It rewrites rows
  in place, so no row is doubled (on a ReplacingMergeTree either: no new version of a row is written), and
  running it again sets the same values: a retry is harmless. The values go through a Join table (`joinGet`), the
  way ClickHouse documents updates from another table.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from clearflow_spec.clickhouse_types import parse_clickhouse_type, quote_ident
from spark_jobs.sink import INGESTED_AT_COLUMN
from webapp.pipelines import metrics_history
from webapp.pipelines.models import Pipeline

MAX_EVENTS = 500_000  # events read again in one fill (held in memory): beyond, the words say it stopped short
READ_SECONDS = 600.0  # for reading them
FILL_ACTION = "pipeline.column_fill"


@dataclass(frozen=True)
class FillReport:
    column: str
    rows_filled: int  # rows whose column was NULL (or the default) and got their event's value
    events_read: int
    events_with_value: int
    message: str  # in words, for the schema-changes card and the activity log


def _since_dt(since: str) -> datetime:
    return datetime.fromisoformat(since.replace("Z", "+00:00"))


def rows_since(pipeline: Pipeline, since: str) -> int:
    """Rows of the pipeline's table written since `since` (ISO time of the batch where a field first showed)."""
    from webapp.connections import clickhouse_client

    spec = pipeline.spec
    sink = spec.sink
    with clickhouse_client.session(pipeline.clickhouse_connection.client_settings()) as ch:
        rows = ch.rows(
            f"SELECT count() FROM {quote_ident(sink.clickhouse.database)}.{quote_ident(sink.table)} "
            f"WHERE {quote_ident(INGESTED_AT_COLUMN)} >= {{since:DateTime64(3, 'UTC')}}",
            {"since": _since_dt(since)},
        )
    return int(rows[0][0])


def start_offsets(pipeline: Pipeline, since: str | None) -> dict[str, dict[str, int]] | None:
    """Where to read again from: the end offsets of the last batch that started before `since`; None (the oldest
    events the topic keeps) when the history has no such batch."""
    if since is None:
        return None
    records = metrics_history.pipeline_metrics_history(pipeline=pipeline, limit=metrics_history.MAX_LIMIT).records
    before = [r for r in records if (r.get("timestamp") or "") < since and r.get("end_offsets")]
    return before[-1]["end_offsets"] if before else None


def _at(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _literal(text: str) -> str:
    """A ClickHouse string literal (joinGet and defaultValueOfTypeName take constants, not parameters)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _decoded(pipeline: Pipeline, spec: Any, events: list[Any]) -> list[Any]:
    if spec.source.format not in ("avro", "protobuf"):
        return [e.value if e.is_json else None for e in events]
    if spec.source.avro_schema is not None:
        from webapp.connections.registry_client import decode_avro

        return [decode_avro(e.raw, spec.source.avro_schema) for e in events]
    from webapp.connections import registry_client

    sample = registry_client.decode_events(pipeline.schema_registry_connection.client_settings(), events)
    return [e.value if e.decode_error is None else None for e in sample.events]


def pipeline_column_fill(
    *, pipeline: Pipeline, path: str, column: str, since: str | None, start: dict[str, dict[str, int]] | None
) -> FillReport:
    """Set `column` on the rows written before it existed from their events read again (see the module's doc).
    Raises ApplicationError (Kafka, ClickHouse, the registry) with its words."""
    from webapp.connections import clickhouse_client
    from webapp.connections.kafka_client import source_topics
    from webapp.connections.kafka_range import read_range

    spec = pipeline.spec
    sink = spec.sink
    keys = list(spec.dedup.keys) if spec.dedup else []
    key_columns = {c.field: c.column for c in sink.columns}
    target = next((c for c in sink.columns if c.column == column), None)
    if target is None:
        return FillReport(column, 0, 0, 0, f"Column `{column}` is not in the pipeline's mapping: nothing filled.")
    if not keys or any(k not in key_columns for k in keys):
        return FillReport(
            column, 0, 0, 0,
            f"The rows written before column `{column}` existed keep NULL: without a dedup key written to the "
            "table, a row cannot be matched to the event it came from.",
        )  # fmt: skip
    kafka = pipeline.kafka_connection.client_settings()
    read = read_range(
        kafka,
        topics=source_topics(kafka, spec.source),
        start=start,
        max_events=MAX_EVENTS,
        read_seconds=READ_SECONDS,
        timeout=30.0,
    )
    values: dict[tuple[str, ...], str] = {}
    for value in _decoded(pipeline, spec, read.events):
        found = _at(value, path)
        key = tuple(_at(value, k) for k in keys)
        if found is None or any(k is None for k in key):
            continue
        values.setdefault(tuple(_text(k) for k in key), _text(found))
    database, table = sink.clickhouse.database, sink.table
    column_type = parse_clickhouse_type(target.type)
    fill_table = f"_cf_fill_{uuid.uuid4().hex[:12]}"
    key_names = [f"k{i}" for i in range(len(keys))]
    filled = 0
    with clickhouse_client.session(pipeline.clickhouse_connection.client_settings(), timeout=300) as ch:
        if values:
            fill_ref = f"{quote_ident(database)}.{quote_ident(fill_table)}"
            ch.command(
                f"CREATE TABLE {fill_ref} ({', '.join(f'{n} String' for n in key_names)}, v String) "
                f"ENGINE = Join(ANY, LEFT, {', '.join(key_names)})",
                {},
            )
            try:
                ch.insert(
                    database=database,
                    table=fill_table,
                    columns=[*key_names, "v"],
                    rows=[[*key, v] for key, v in values.items()],
                )
                row_key = ", ".join(f"toString({quote_ident(key_columns[k])})" for k in keys)
                col = quote_ident(column)
                empty = (
                    f"isNull({col})"
                    if column_type.nullable
                    else f"{col} = defaultValueOfTypeName({_literal(column_type.sql())})"
                )
                where = f"{empty} AND ({row_key}) IN (SELECT {', '.join(key_names)} FROM {fill_ref})"
                if since is not None:
                    where += f" AND {quote_ident(INGESTED_AT_COLUMN)} >= {{since:DateTime64(3, 'UTC')}}"
                params = {"since": _since_dt(since)} if since is not None else {}
                table_ref = f"{quote_ident(database)}.{quote_ident(table)}"
                filled = int(ch.rows(f"SELECT count() FROM {table_ref} WHERE {where}", params)[0][0])
                if filled:
                    ch.command(
                        f"ALTER TABLE {table_ref} UPDATE {col} = "
                        f"CAST(joinGet({_literal(f'{database}.{fill_table}')}, 'v', {row_key}), "
                        f"{_literal(column_type.sql())}) WHERE {where}",
                        params,
                        query_settings={"mutations_sync": 2},
                    )
            finally:
                ch.command(f"DROP TABLE IF EXISTS {fill_ref}", {})
    return FillReport(column, filled, len(read.events), len(values), _words(column, filled, read, len(values)))


def _words(column: str, filled: int, read: Any, with_value: int) -> str:
    text = (
        f"Column `{column}`: {filled:,} row{'s' if filled != 1 else ''} written before it existed "
        f"{'were' if filled != 1 else 'was'} filled from {len(read.events):,} events read again from Kafka "
        f"({with_value:,} keys carried a value)."
    )
    for gone in read.gone:
        text += (
            f" The topic no longer keeps offsets {gone.start:,} to {gone.earliest - 1:,} of {gone.topic} partition "
            f"{gone.partition} ({gone.events:,} events, dropped by retention): their rows keep NULL."
        )
    if not read.complete:
        text += (
            f" The read stopped after {len(read.events):,} events (the limit of one fill): at least the rows of "
            "the events after them keep NULL."
        )
    return text


def fill_ready(pipeline: Pipeline, version: int) -> bool:
    """Whether no job of a version before `version` can still write rows: the new version runs, or none does."""
    if pipeline.status in ("deploy_requested", "stop_requested"):
        return False
    if pipeline.status == "running":
        return pipeline.deployed_version is not None and pipeline.deployed_version.number >= version
    return True


def pipeline_column_fill_record(*, pipeline: Pipeline, report: FillReport | None, error: str = "") -> None:
    """The fill's outcome in the activity log, where the schema-changes card reads the last one."""
    from webapp.activity.services import activity_record

    after: dict[str, Any] = {"message": error}
    if report is not None:
        after = {
            "column": report.column,
            "rows_filled": report.rows_filled,
            "events_read": report.events_read,
            "message": report.message,
        }
    activity_record(actor=None, action=FILL_ACTION, target=pipeline, after=after)


def last_fill_message(pipeline: Pipeline) -> str:
    """The words of the pipeline's last column fill, "" when none."""
    from webapp.activity.models import ActivityEntry

    entry = (
        ActivityEntry.objects.filter(object_type="pipeline", object_id=pipeline.pk, action=FILL_ACTION)
        .order_by("-pk")
        .first()
    )
    return str((entry.after or {}).get("message", "")) if entry is not None else ""
