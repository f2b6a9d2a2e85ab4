"""Read a pipeline's recent micro-batch metrics, which the Spark job publishes to Redis (spark_jobs.metrics).

A small reader of our own until the pipelines app has a selector for it. One short-lived client per call
(nothing at import time), one-second timeouts: the pipeline page must not hang on a slow Redis.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings

from spark_jobs.metrics import recent_key

logger = logging.getLogger(__name__)


class MetricsUnavailable(Exception):
    pass


def pipeline_recent_metrics(*, name: str, limit: int = 60) -> list[dict[str, Any]]:
    """Up to `limit` metrics records of the pipeline, oldest first. Raises MetricsUnavailable."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
    try:
        raw = client.lrange(recent_key(name), 0, max(0, limit - 1))
    except redis.RedisError as exc:
        logger.warning("metrics of pipeline %s unavailable: %s", name, exc)
        raise MetricsUnavailable("The metrics store (Redis) did not answer.") from None
    finally:
        client.close()
    records = []
    for item in reversed(raw):  # the job pushes the newest first
        try:
            record = json.loads(item)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def chart_series(records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Columns for the chart: time (unix seconds) and per-batch counts."""
    from datetime import datetime

    series: dict[str, list[Any]] = {
        "t": [],
        "input_rows": [],
        "rows_written": [],
        "duplicates_dropped": [],
        "total_lag": [],
    }
    for record in records:
        try:
            moment = datetime.fromisoformat(str(record.get("timestamp", "")).replace("Z", "+00:00"))
        except ValueError:
            continue
        series["t"].append(int(moment.timestamp()))
        for key in ("input_rows", "rows_written", "duplicates_dropped", "total_lag"):
            series[key].append(int(record.get(key) or 0))
    return series
