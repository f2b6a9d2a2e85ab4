"""The metrics the Spark job publishes to Redis (`spark_jobs.metrics`), read for the pipeline page.

The job pushes one JSON record per micro-batch (the fields of `clearflow_spec.protocol.BatchMetrics`) onto the
list `clearflow_spec.protocol.recent_key(<spec name>)` (the job's spec name is `Pipeline.job_name`), newest
first. One short-lived client per call (nothing at import time), one-second timeouts: the pipeline page
must not hang on a slow Redis.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings

from clearflow_spec.protocol import recent_key
from webapp.core.exceptions import ExternalServiceError

logger = logging.getLogger(__name__)


class MetricsUnavailableError(ExternalServiceError):
    """Redis did not answer (API status 502); `.message` says so in plain words."""


def recent_records(job_name: str, *, limit: int) -> list[dict[str, Any]]:
    """Up to `limit` metrics records published under `job_name`, oldest first. MetricsUnavailableError."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
    try:
        raw = client.lrange(recent_key(job_name), 0, max(0, limit - 1))
    except redis.RedisError as exc:
        logger.warning("metrics of %s unavailable: %s", job_name, exc)
        raise MetricsUnavailableError("The metrics store (Redis) did not answer.") from None
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
