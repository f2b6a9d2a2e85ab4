"""What the worker publishes about running jobs in Redis, read by the web app (keys in `clearflow_spec.protocol`).

- the job's log tail (`job_log_key`), secrets already redacted by the worker: the web app may run on another
  host than the job, so it never reads the log file itself;
- the watcher's last tick (`WATCHER_TICK_KEY`): health asks whether beat ticks.
"""

from __future__ import annotations

import logging

from django.conf import settings

from clearflow_spec.protocol import WATCHER_TICK_KEY, job_log_key
from webapp.pipelines.metrics import MetricsUnavailableError

logger = logging.getLogger(__name__)


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
