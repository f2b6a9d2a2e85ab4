"""The app's own running counts (HTTP requests, Celery task outcomes), kept in Redis.

In Redis rather than in each process: gunicorn runs several workers and Celery others, and a scrape reaches only
one of them; a hash per kind, one HINCRBY per event, is read whole at scrape time. Counting never fails the
request or the task it counts: a Redis that does not answer loses the increment (warned at most once a minute),
and the process stops trying for PAUSE_AFTER_ERROR_S, so that a Redis that hangs does not slow every request.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings

from clearflow_spec.protocol import CELERY_TASKS_KEY, COUNTER_LABEL_SEPARATOR, HTTP_REQUESTS_KEY

logger = logging.getLogger(__name__)


_lock = threading.Lock()
_clients: dict[str, Any] = {}
_warned_at = 0.0
_paused_until: dict[str, float] = {}  # per Redis URL
PAUSE_AFTER_ERROR_S = 10.0


def _redis() -> Any:
    """One pooled client per process and URL, made on first use (not at import), with short timeouts: counting
    must stay cheap."""
    url = settings.REDIS_URL
    with _lock:
        if url not in _clients:
            import redis

            _clients[url] = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        return _clients[url]


def _increment(key: str, *labels: str) -> None:
    global _warned_at
    now, url = time.monotonic(), settings.REDIS_URL
    if now < _paused_until.get(url, 0.0):
        return
    try:
        _redis().hincrby(key, COUNTER_LABEL_SEPARATOR.join(labels), 1)
    except Exception as exc:  # any Redis or connection error: the request or task goes on
        _paused_until[url] = now + PAUSE_AFTER_ERROR_S
        if now - _warned_at > 60:
            _warned_at = now
            logger.warning("could not count %s in Redis (paused %.0f s): %s", key, PAUSE_AFTER_ERROR_S, exc)


def count_request(*, view: str, status: int) -> None:
    _increment(HTTP_REQUESTS_KEY, view, str(status))


def count_task(*, task: str, outcome: str) -> None:
    _increment(CELERY_TASKS_KEY, task, outcome)


def read_counts(client: Any, key: str) -> dict[tuple[str, ...], int]:
    """The hash at `key` as {labels: count}, with the client the caller holds."""
    counts = {}
    for field, value in client.hgetall(key).items():
        counts[tuple(field.decode().split(COUNTER_LABEL_SEPARATOR))] = int(value)
    return counts
