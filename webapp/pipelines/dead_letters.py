"""A pipeline's dead letters: browse, download, replay, purge.

The engine (`spark_jobs.sink`) writes events it cannot use to the dead-letter table of the running spec
(`sink.dlq_table`, default `<table>_dlq`, same database) with the reason, the raw value and where it came
from (topic, partition, offset). Tables may be shared between pipelines, so every statement here is limited
to the pipeline's own rows (`pipeline = <job name>`).

Before a replay, `dead_letters_replay_forecast` runs the same dead letters through the checks of the spec that
would read them again (`clearflow_spec.conversion.record_outcome`, the engine's rules in plain Python): how many
would fail again for the reason they failed for, and how many for another.

Replay sends the raw values back to their source topic so they go through parsing and dedup again, then
deletes the replayed rows (by topic, partition and offset; only those the broker acknowledged) from the
dead-letter table: an event that fails again is written anew by the engine, under its new offset, so the
table always lists what is still unusable, and a second replay never sends an event twice.

Every statement goes through `clickhouse_client.session` (parameters, quoted identifiers). Reads are
selectors, writes are services (HackSoft); both take the pipeline already checked for ownership.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from clearflow_spec import spec as specmod
from clearflow_spec.clickhouse_types import quote_ident
from clearflow_spec.conversion import record_outcome
from webapp.activity.services import activity_record
from webapp.connections import clickhouse_client, kafka_client
from webapp.core.exceptions import ConflictError, ExternalServiceError
from webapp.pipelines.models import Pipeline

logger = logging.getLogger(__name__)

PAGE_SIZE = 25
MAX_PAGE_SIZE = 500
REPLAY_LIMIT = 10_000  # per request: bounded work in a web request; the answer says how many remain
DELETE_CHUNK = 5_000  # offsets per DELETE statement (they travel as one array parameter)
STREAM_TIMEOUT = 300.0


@dataclass(frozen=True)
class DeadLetterTable:
    database: str
    table: str
    job_name: str

    @property
    def qualified(self) -> str:
        return f"{quote_ident(self.database)}.{quote_ident(self.table)}"

    @property
    def display_name(self) -> str:
        return f"{self.database}.{self.table}"


@dataclass(frozen=True)
class DeadLetter:
    inserted_at: datetime
    reason: str
    topic: str
    partition: int
    offset: int
    kafka_timestamp: datetime | None
    batch_id: int
    raw: str

    def to_json_line(self) -> str:
        return json.dumps(
            {
                "inserted_at": self.inserted_at.isoformat(),
                "reason": self.reason,
                "topic": self.topic,
                "partition": self.partition,
                "offset": self.offset,
                "kafka_timestamp": self.kafka_timestamp.isoformat() if self.kafka_timestamp else None,
                "batch_id": self.batch_id,
                "raw": self.raw,
            },
            ensure_ascii=False,
        )


@dataclass(frozen=True)
class DeadLetterPage:
    table: DeadLetterTable
    table_exists: bool
    count: int
    page: int
    page_size: int
    results: list[DeadLetter]

    @property
    def pages(self) -> int:
        return max(1, -(-self.count // self.page_size))


@dataclass(frozen=True)
class ReplayForecast:
    """What a replay of the same dead letters would meet, by the checks of the spec that reads them again."""

    count: int  # dead letters a replay sends (up to its limit)
    remaining: int  # more than that: a later replay sends them
    version: int | None  # the pipeline version whose spec was checked (None: no dead-letter table yet)
    same_reason: list[tuple[str, int]]  # reasons they fail for again, with how many, most first
    other_reason: list[tuple[str, int]]  # new reasons (the spec changed since), with how many
    passing: int  # pass every check that can be made before the job runs

    @property
    def failing_again(self) -> int:
        return sum(n for _, n in self.same_reason) + sum(n for _, n in self.other_reason)

    @property
    def same_count(self) -> int:
        return sum(n for _, n in self.same_reason)

    @property
    def other_count(self) -> int:
        return sum(n for _, n in self.other_reason)


@dataclass(frozen=True)
class ReplayResult:
    replayed: int
    failed: int
    remaining: int
    error: str | None


_COLUMNS = "inserted_at, reason, topic, partition, offset, kafka_timestamp, batch_id, raw"


def dead_letter_table(*, pipeline: Pipeline) -> DeadLetterTable:
    """Where the running (else the current) version writes its dead letters."""
    version = pipeline.deployed_version or pipeline.current_version
    if version is None:
        raise ConflictError("The pipeline has no spec.")
    try:
        sink = version.spec.sink
    except specmod.SpecError:
        raise ConflictError("The pipeline's spec is not valid: fix it to see its dead letters.") from None
    return DeadLetterTable(database=sink.clickhouse.database, table=sink.dead_letter_table, job_name=pipeline.job_name)


def _row(values: tuple) -> DeadLetter:
    inserted_at, reason, topic, partition, offset, kafka_timestamp, batch_id, raw = values
    return DeadLetter(
        inserted_at=inserted_at,
        reason=reason,
        topic=topic,
        partition=int(partition),
        offset=int(offset),
        kafka_timestamp=kafka_timestamp,
        batch_id=int(batch_id),
        raw=raw.decode("utf-8", errors="replace"),
    )


def dead_letter_page(
    *, pipeline: Pipeline, page: int = 1, page_size: int = PAGE_SIZE, with_payloads: bool = True
) -> DeadLetterPage:
    """One page of the pipeline's dead letters, newest first (then by topic, partition, offset); without their
    payloads (`raw` empty) for a viewer of a workspace that hides them."""
    table = dead_letter_table(pipeline=pipeline)
    page, page_size = max(1, page), max(1, min(page_size, MAX_PAGE_SIZE))
    with clickhouse_client.session(pipeline.clickhouse_connection.client_settings()) as ch:
        if not ch.table_exists(database=table.database, table=table.table):
            return DeadLetterPage(table, False, 0, page, page_size, [])
        where = {"pipeline": table.job_name}
        count = ch.rows(f"SELECT count() FROM {table.qualified} WHERE pipeline = {{pipeline:String}}", where)[0][0]
        rows = ch.rows(
            f"SELECT {_COLUMNS} FROM {table.qualified} WHERE pipeline = {{pipeline:String}}"
            " ORDER BY inserted_at DESC, topic, partition, offset DESC"
            " LIMIT {limit:UInt32} OFFSET {offset:UInt64}",
            {**where, "limit": page_size, "offset": (page - 1) * page_size},
            bytes_columns=("raw",),
        )
    letters = [_row(r) for r in rows]
    if not with_payloads:
        letters = [replace(letter, raw="") for letter in letters]
    return DeadLetterPage(table, True, int(count), page, page_size, letters)


def dead_letter_get(*, pipeline: Pipeline, topic: str, partition: int, offset: int) -> DeadLetter | None:
    """The pipeline's newest dead letter from that topic, partition and offset (None: not there, or replayed)."""
    table = dead_letter_table(pipeline=pipeline)
    with clickhouse_client.session(pipeline.clickhouse_connection.client_settings()) as ch:
        if not ch.table_exists(database=table.database, table=table.table):
            return None
        rows = ch.rows(
            f"SELECT {_COLUMNS} FROM {table.qualified} WHERE pipeline = {{pipeline:String}}"
            " AND topic = {topic:String} AND partition = {partition:Int32} AND offset = {offset:Int64}"
            " ORDER BY inserted_at DESC LIMIT 1",
            {"pipeline": table.job_name, "topic": topic, "partition": partition, "offset": offset},
            bytes_columns=("raw",),
        )
    return _row(rows[0]) if rows else None


def dead_letters_replay_forecast(*, pipeline: Pipeline, limit: int = REPLAY_LIMIT) -> ReplayForecast:
    """The dead letters a replay would send (as `dead_letters_replay` picks them), each checked against the
    spec of the version that would read them again (the deployed one, else the current one)."""
    table = dead_letter_table(pipeline=pipeline)  # refuses a pipeline without a valid spec
    version = pipeline.deployed_version or pipeline.current_version
    spec = version.spec
    with clickhouse_client.session(pipeline.clickhouse_connection.client_settings(), timeout=STREAM_TIMEOUT) as ch:
        if not ch.table_exists(database=table.database, table=table.table):
            return ReplayForecast(0, 0, None, [], [], 0)
        where = {"pipeline": table.job_name}
        rows = ch.rows(
            f"SELECT any(reason) AS last_reason, any(raw) AS raw_value FROM {table.qualified}"
            " WHERE pipeline = {pipeline:String} GROUP BY topic, partition, offset"
            " ORDER BY min(inserted_at), topic, partition, offset LIMIT {limit:UInt32}",
            {**where, "limit": max(1, limit)},
            bytes_columns=("raw_value",),
        )
        total = ch.rows(
            f"SELECT uniqExact(topic, partition, offset) FROM {table.qualified} WHERE pipeline = {{pipeline:String}}",
            where,
        )[0][0]
    same: Counter[str] = Counter()
    other: Counter[str] = Counter()
    passing = 0
    for reason, raw in rows:
        outcome = record_outcome(raw, spec)
        if outcome.ok:
            passing += 1
        else:
            (same if outcome.reason == reason else other)[outcome.reason] += 1
    return ReplayForecast(
        count=len(rows),
        remaining=max(0, int(total) - len(rows)),
        version=version.number,
        same_reason=same.most_common(),
        other_reason=other.most_common(),
        passing=passing,
    )


def dead_letter_json_lines(*, pipeline: Pipeline) -> Iterator[str]:
    """Every dead letter of the pipeline as JSON lines, newest first, streamed from ClickHouse.

    Checks the table before returning the iterator (so a missing server fails as an API error, not in the
    middle of a download); an error while streaming ends the download early and is logged.
    """
    table = dead_letter_table(pipeline=pipeline)
    settings = pipeline.clickhouse_connection.client_settings()
    with clickhouse_client.session(settings) as ch:
        exists = ch.table_exists(database=table.database, table=table.table)

    def lines() -> Iterator[str]:
        if not exists:
            return
        try:
            with clickhouse_client.session(settings, timeout=STREAM_TIMEOUT) as ch:
                for values in ch.stream_rows(
                    f"SELECT {_COLUMNS} FROM {table.qualified} WHERE pipeline = {{pipeline:String}}"
                    " ORDER BY inserted_at DESC, topic, partition, offset DESC",
                    {"pipeline": table.job_name},
                    bytes_columns=("raw",),
                ):
                    yield _row(values).to_json_line() + "\n"
        except ExternalServiceError as exc:
            logger.warning("dead-letter download of %s ended early: %s", table.job_name, exc.message)

    return lines()


def dead_letters_replay(*, pipeline: Pipeline, limit: int = REPLAY_LIMIT, actor: Any = None) -> ReplayResult:
    """Send up to `limit` dead letters (oldest first, one per topic/partition/offset) back to their source
    topic, then delete those the broker acknowledged from the dead-letter table (and say so in the activity
    log: the rows live in ClickHouse, so the entry is written once they are gone)."""
    table = dead_letter_table(pipeline=pipeline)
    settings = pipeline.clickhouse_connection.client_settings()
    with clickhouse_client.session(settings, timeout=STREAM_TIMEOUT) as ch:
        if not ch.table_exists(database=table.database, table=table.table):
            return ReplayResult(0, 0, 0, None)
        rows = ch.rows(
            f"SELECT topic, partition, offset, any(raw) AS raw_value FROM {table.qualified}"
            " WHERE pipeline = {pipeline:String} GROUP BY topic, partition, offset"
            " ORDER BY min(inserted_at), topic, partition, offset"
            " LIMIT {limit:UInt32}",
            {"pipeline": table.job_name, "limit": max(1, limit)},
            bytes_columns=("raw_value",),
        )
        report = kafka_client.produce_values(
            pipeline.kafka_connection.client_settings(), [(topic, raw) for topic, _, _, raw in rows]
        )
        if rows and not report.delivered:
            raise ExternalServiceError(f"No dead letter was replayed: {report.first_error}")
        _delete_keys(ch, table, [rows[i][:3] for i in report.delivered])
        remaining = ch.rows(
            f"SELECT uniqExact(topic, partition, offset) FROM {table.qualified} WHERE pipeline = {{pipeline:String}}",
            {"pipeline": table.job_name},
        )[0][0]
    logger.info("replayed %d dead letters of %s (%d failed)", len(report.delivered), table.job_name, report.failed)
    if report.delivered:
        activity_record(
            actor=actor,
            action="dead_letter.replay",
            target=pipeline,
            after={"replayed": len(report.delivered), "failed": report.failed, "remaining": int(remaining)},
        )
    return ReplayResult(len(report.delivered), report.failed, int(remaining), report.first_error)


def _delete_keys(ch: Any, table: DeadLetterTable, keys: list[tuple[str, int, int]]) -> None:
    by_partition: dict[tuple[str, int], list[int]] = defaultdict(list)
    for topic, partition, offset in keys:
        by_partition[(topic, int(partition))].append(int(offset))
    for (topic, partition), offsets in by_partition.items():
        for start in range(0, len(offsets), DELETE_CHUNK):
            ch.command(
                f"DELETE FROM {table.qualified} WHERE pipeline = {{pipeline:String}} AND topic = {{topic:String}}"
                " AND partition = {partition:Int32} AND offset IN {offsets:Array(Int64)}",
                {
                    "pipeline": table.job_name,
                    "topic": topic,
                    "partition": partition,
                    "offsets": offsets[start : start + DELETE_CHUNK],
                },
            )


def dead_letters_purge(*, pipeline: Pipeline, actor: Any = None) -> int:
    """Delete every dead letter of the pipeline (a lightweight DELETE: other pipelines sharing the table keep
    theirs). Returns how many there were."""
    table = dead_letter_table(pipeline=pipeline)
    with clickhouse_client.session(pipeline.clickhouse_connection.client_settings(), timeout=STREAM_TIMEOUT) as ch:
        if not ch.table_exists(database=table.database, table=table.table):
            return 0
        where = {"pipeline": table.job_name}
        count = ch.rows(f"SELECT count() FROM {table.qualified} WHERE pipeline = {{pipeline:String}}", where)[0][0]
        if count:
            ch.command(f"DELETE FROM {table.qualified} WHERE pipeline = {{pipeline:String}}", where)
    logger.info("purged %d dead letters of %s", count, table.job_name)
    activity_record(actor=actor, action="dead_letter.purge", target=pipeline, before={"dead_letters": int(count)})
    return int(count)
