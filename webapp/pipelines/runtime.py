"""What the worker publishes about running jobs in Redis, and how the web app reads it.

- `clearflow:joblog:<job name>`: the last lines of the job's log, secrets already redacted by the worker
  (the web app may run on another host than the job, so it never reads the log file itself);
- `clearflow:heartbeat:<job name>`: epoch seconds of the job's last progress or idle event (set by the job,
  `spark_jobs.metrics`);
- `clearflow:watcher:tick`: epoch seconds of the watcher's last run (health: has beat ticked?).
"""

from __future__ import annotations

import logging

from django.conf import settings

from spark_jobs.metrics import heartbeat_key
from webapp.pipelines.metrics import MetricsUnavailableError

logger = logging.getLogger(__name__)

WATCHER_TICK_KEY = "clearflow:watcher:tick"
JOB_LOG_TTL_SECONDS = 7 * 24 * 3600

__all__ = ["JOB_LOG_TTL_SECONDS", "WATCHER_TICK_KEY", "heartbeat_key", "job_log", "job_log_key", "watcher_tick"]


def job_log_key(job_name: str) -> str:
    return f"clearflow:joblog:{job_name}"


def _client():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)


def job_log(job_name: str, *, lines: int = 100) -> list[str]:
    """The last `lines` lines of the job's log (redacted), [] before the first run. MetricsUnavailableError."""
    import redis

    client = _client()
    try:
        raw = client.get(job_log_key(job_name))
    except redis.RedisError as exc:
        logger.warning("log of %s unavailable: %s", job_name, exc)
        raise MetricsUnavailableError("The job log store (Redis) did not answer.") from None
    finally:
        client.close()
    if not raw:
        return []
    return raw.decode("utf-8", errors="replace").splitlines()[-lines:]


def watcher_tick() -> float | None:
    """Epoch seconds of the watcher's last tick (None: never, or Redis down)."""
    import redis

    client = _client()
    try:
        raw = client.get(WATCHER_TICK_KEY)
    except redis.RedisError:
        return None
    finally:
        client.close()
    return float(raw) if raw else None
