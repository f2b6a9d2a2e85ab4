"""The worker's Redis: it publishes job log tails and the watcher's tick, and reads the jobs' heartbeats (keys in
`clearflow_spec.protocol`; the web app reads them in `webapp.pipelines.runtime`). One client per worker process,
created on first use (never at import)."""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from clearflow_spec import protocol
from worker import jobs

log = logging.getLogger(__name__)

_client: Any = None
_secrets: dict[str, list[str]] = {}  # job name -> secret values to redact from its log
_published_size: dict[int, int] = {}  # run id -> log size at the last publication


def client() -> Any:
    """This worker process's Redis client (the stack's Redis: leases, heartbeats, logs)."""
    global _client
    if _client is None:
        import redis

        _client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    return _client


def beat_ticked() -> None:
    try:
        client().set(protocol.WATCHER_TICK_KEY, f"{time.time():.3f}")
    except Exception as exc:
        log.warning("could not record the watcher's tick: %s", exc)


def heartbeat_at(job_name: str) -> datetime | None:
    try:
        raw = client().get(protocol.heartbeat_key(job_name))
    except Exception as exc:
        log.warning("could not read the heartbeat of %s: %s", job_name, exc)
        return None  # Redis down: no heartbeat seen, the run's own start time counts
    return datetime.fromtimestamp(float(raw), UTC) if raw else None


# When this worker first found a job's heartbeat missing (Redis restarted without its keys, or down).
_heartbeat_missing_since: dict[str, datetime] = {}


def heartbeat_or_missing_since(job_name: str) -> datetime:
    """The job's last heartbeat; when there is none to read, the moment this worker first found it missing. A
    Redis restarted (it keeps no keys) or down says nothing about the job: it is not taken for stalled until a
    whole heartbeat timeout has passed without one from then on (a worker started meanwhile starts counting
    anew)."""
    beat = heartbeat_at(job_name)
    if beat is not None:
        _heartbeat_missing_since.pop(job_name, None)
        return beat
    return _heartbeat_missing_since.setdefault(job_name, datetime.now(UTC))


def last_batch_at(job_name: str) -> datetime | None:
    """When the job's latest micro-batch (its metrics record) started; None when none is recorded or Redis is
    down."""
    try:
        raw = client().get(protocol.latest_key(job_name))
        stamp = json.loads(raw).get("timestamp") if raw else None
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
    except Exception as exc:
        log.warning("could not read the latest batch of %s: %s", job_name, exc)
        return None


def remember_secrets(job_name: str, secrets: list[str]) -> None:
    _secrets[job_name] = secrets


def secrets_of(pipeline: Any) -> list[str]:
    """The secrets to redact from the job's log (computed again after a worker restart)."""
    if pipeline.job_name not in _secrets:
        from webapp.pipelines.services import pipeline_job_spec

        try:
            _secrets[pipeline.job_name] = jobs.secret_values(pipeline_job_spec(pipeline=pipeline))
        except Exception:
            return []
    return _secrets[pipeline.job_name]


def publish_log(job_name: str, run: Any, *, text: str | None = None) -> None:
    """Put the redacted tail of the run's log in Redis when the log grew (cheap when nothing changed)."""
    if text is None:
        size = jobs.log_size(run.log_path)
        if size < 0 or _published_size.get(run.pk) == size:
            return
        _published_size[run.pk] = size
        text = jobs.log_tail(run.log_path, lines=200, secrets=_secrets.get(job_name) or secrets_of(run.pipeline))
    try:
        client().set(protocol.job_log_key(job_name), text, ex=protocol.JOB_LOG_TTL_SECONDS)
    except Exception as exc:
        log.warning("could not publish the log of %s: %s", job_name, exc)
