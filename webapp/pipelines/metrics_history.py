"""A pipeline's metrics over time, as the Spark job keeps them in Redis (`spark_jobs.metrics`).

The job adds each micro-batch's record to a sorted set scored by the batch's start (unix ms) and keeps
running totals in a hash, in the same transaction as the latest record; it trims the set to
`HISTORY_MAX_RECORDS` and `HISTORY_MAX_AGE_S`. No collector sits in between: nothing is lost between
collector ticks, and nothing runs when no pipeline does. Beside them, the worker keeps each deployed pipeline's
lag as read from the brokers and its pace (`worker.lag`: `lag_key`, `pace_key`), read here too (`pace_of`,
`lag_history`). This module only reads (selectors).

One short-lived client per call, one-second timeouts (as `metrics.recent_records`): a page must not hang on a
slow Redis; a Redis that does not answer is a MetricsUnavailableError (API 502).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from clearflow_spec.protocol import (
    HISTORY_MAX_AGE_S,
    HISTORY_MAX_RECORDS,
    LAG_KEEP_SECONDS,
    TOTAL_FIELDS,
    history_key,
    lag_key,
    latest_key,
    pace_key,
    totals_key,
)
from spark_jobs.metrics import timestamp_ms
from webapp.pipelines.metrics import MetricsUnavailableError
from webapp.pipelines.models import Pipeline

logger = logging.getLogger(__name__)

DEFAULT_LIMIT = 1_000
MAX_LIMIT = HISTORY_MAX_RECORDS
# A latest record older than this is not "current" throughput: the job is idle (it publishes nothing for
# triggers that read nothing) or gone.
CURRENT_WITHIN_S = 60


@dataclass(frozen=True)
class MetricsHistory:
    records: list[dict[str, Any]]  # oldest first, each with `t_ms` and `duplicate_share` added
    totals: dict[str, Any]  # TOTAL_FIELDS and `batches` summed since `since` (ISO time of the first batch)
    has_more: bool  # more records after the last one returned (ask again with since = next_since)
    next_since: int | None  # `t_ms` of the last record returned
    retention: dict[str, int] = field(
        default_factory=lambda: {"max_records": HISTORY_MAX_RECORDS, "max_age_seconds": HISTORY_MAX_AGE_S}
    )


@contextmanager
def metrics_store() -> Iterator[Any]:
    """A short-lived Redis client; any Redis error inside the block becomes a MetricsUnavailableError."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
    try:
        yield client
    except redis.RedisError as exc:
        logger.warning("metrics unavailable: %s", exc)
        raise MetricsUnavailableError("The metrics store (Redis) did not answer.") from None
    finally:
        client.close()


def _decoded(raw: bytes | str, score: float | None = None) -> dict[str, Any] | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    at_ms = timestamp_ms(str(record.get("timestamp", "")))
    record["t_ms"] = at_ms if at_ms is not None else (int(score) if score is not None else None)
    input_rows = int(record.get("input_rows") or 0)
    record["duplicate_share"] = round(int(record.get("duplicates_dropped") or 0) / input_rows, 4) if input_rows else 0.0
    return record


def pipeline_metrics_history(
    *, pipeline: Pipeline, since_ms: int | None = None, limit: int = DEFAULT_LIMIT
) -> MetricsHistory:
    """The pipeline's per-batch records, oldest first: with `since_ms`, the first `limit` records of batches
    that started strictly after it (poll with the last `t_ms` seen); without, the newest `limit`."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    key = history_key(pipeline.job_name)
    with metrics_store() as client:
        if since_ms is None:
            raw = list(reversed(client.zrevrange(key, 0, limit, withscores=True)))
            has_more = False
            if len(raw) > limit:
                raw = raw[1:]
        else:
            raw = client.zrangebyscore(key, f"({int(since_ms)}", "+inf", start=0, num=limit + 1, withscores=True)
            has_more = len(raw) > limit
            raw = raw[:limit]
        totals_raw = client.hgetall(totals_key(pipeline.job_name))
    records = [r for r in (_decoded(member, score) for member, score in raw) if r is not None]
    return MetricsHistory(
        records=records,
        totals=_totals(totals_raw),
        has_more=has_more,
        next_since=int(raw[-1][1]) if raw else since_ms,
    )


def _totals(raw: dict[bytes, bytes]) -> dict[str, Any]:
    values = {k.decode(): v.decode() for k, v in raw.items()}
    totals: dict[str, Any] = {name: int(values.get(name, 0)) for name in (*TOTAL_FIELDS, "batches")}
    totals["since"] = values.get("since")
    return totals


@dataclass(frozen=True)
class Throughput:
    events_per_second: float
    at: str  # ISO time of the batch it was measured on


def current_throughput(pipelines: Iterable[Pipeline], *, now: float | None = None) -> dict[int, Throughput]:
    """Events in per second of each pipeline's latest batch, for those with a batch in the last minute.

    One MGET for all of them; an unreachable Redis gives an empty answer (the list page still renders)."""
    pipelines = list(pipelines)
    if not pipelines:
        return {}
    try:
        with metrics_store() as client:
            latest = client.mget([latest_key(p.job_name) for p in pipelines])
    except MetricsUnavailableError:
        return {}
    now_ms = (now if now is not None else time.time()) * 1000
    out: dict[int, Throughput] = {}
    for pipeline, raw in zip(pipelines, latest, strict=True):
        record = _decoded(raw) if raw else None
        if record is None or record["t_ms"] is None or now_ms - record["t_ms"] > CURRENT_WITHIN_S * 1000:
            continue
        rate = float(record.get("input_rows_per_second") or 0.0)
        out[pipeline.pk] = Throughput(events_per_second=rate, at=str(record.get("timestamp", "")))
    return out


@dataclass(frozen=True)
class MetricsSnapshot:
    latest: dict[str, Any] | None  # the latest batch's record (fields of BatchMetrics), None before the first
    totals: dict[str, Any] | None  # as MetricsHistory.totals; None when the job has published nothing
    pace: dict[str, Any] | None = None  # `pace_of`: the lag read from the brokers and its pace; None: not read


def metrics_snapshots(pipelines: Iterable[Pipeline]) -> dict[int, MetricsSnapshot]:
    """Each pipeline's latest record and running totals, in one round trip. MetricsUnavailableError."""
    pipelines = list(pipelines)
    if not pipelines:
        return {}
    with metrics_store() as client:
        pipe = client.pipeline(transaction=False)
        for pipeline in pipelines:
            pipe.get(latest_key(pipeline.job_name))
            pipe.hgetall(totals_key(pipeline.job_name))
            pipe.get(pace_key(pipeline.job_name))
        answers = pipe.execute()
    out: dict[int, MetricsSnapshot] = {}
    now_ms = time.time() * 1000
    for index, pipeline in enumerate(pipelines):
        latest_raw, totals_raw, pace_raw = answers[3 * index : 3 * index + 3]
        out[pipeline.pk] = MetricsSnapshot(
            latest=_decoded(latest_raw) if latest_raw else None,
            totals=_totals(totals_raw) if totals_raw else None,
            pace=_pace(pace_raw, now_ms=now_ms),
        )
    return out


# A pace older than this was not read lately (the worker or the broker is away): shown as such, never as current.
PACE_STALE_AFTER_S = 90


def _pace(raw: bytes | str | None, *, now_ms: float) -> dict[str, Any] | None:
    if not raw:
        return None
    try:
        pace = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(pace, dict):
        return None
    measured = pace.get("measured_at_ms")
    pace["stale"] = measured is None or now_ms - float(measured) > PACE_STALE_AFTER_S * 1000
    if pace["stale"]:
        pace["summary"] = "The lag has not been read for a while: the worker or the brokers do not answer."
    return pace


def pace_of(pipeline: Pipeline) -> dict[str, Any] | None:
    """The pipeline's lag as last read from the brokers and its pace (`clearflow_spec.pace.Pace.to_dict()` with
    `cause`, `cause_words` and `stale`); None before the first reading. MetricsUnavailableError."""
    with metrics_store() as client:
        raw = client.get(pace_key(pipeline.job_name))
    return _pace(raw, now_ms=time.time() * 1000)


def lag_history(*, pipeline: Pipeline, since_ms: int | None = None, limit: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
    """The lag readings (`protocol.LagReading` fields), oldest first: with `since_ms` the first `limit` read after
    it, without the newest `limit`. MetricsUnavailableError."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    key = lag_key(pipeline.job_name)
    with metrics_store() as client:
        if since_ms is None:
            raw = list(reversed(client.zrevrange(key, 0, limit - 1)))
        else:
            raw = client.zrangebyscore(key, f"({int(since_ms)}", "+inf", start=0, num=limit)
    readings = []
    for member in raw:
        try:
            reading = json.loads(member)
        except ValueError:
            continue
        if isinstance(reading, dict):
            readings.append(reading)
    return readings


def topics_read(pipeline: Pipeline) -> list[str] | None:
    """The topics the pipeline reads now, by name, as the last lag reading found them on the brokers (for a topic
    pattern: the topics it matched then); None before the first reading. MetricsUnavailableError."""
    readings = lag_history(pipeline=pipeline, limit=1)
    if not readings or not isinstance(readings[-1].get("lag"), dict):
        return None
    return sorted(readings[-1]["lag"])


def topics_read_or_none(pipeline: Pipeline) -> list[str] | None:
    """`topics_read` for a page or an answer that draws without it: None also when Redis does not answer."""
    try:
        return topics_read(pipeline)
    except MetricsUnavailableError:
        return None


LAG_RETENTION_SECONDS = LAG_KEEP_SECONDS
