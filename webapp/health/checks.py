"""Is each component of the stack up? One small check per component, run in parallel with a deadline.

A check returns a short, secret-free description on success and raises on failure; the message of the
exception is what the health page shows. No address or credential appears in either: the endpoint is open.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass

from django.conf import settings
from django.db import connections

CHECK_TIMEOUT_SECONDS = 3.0


@dataclass(frozen=True)
class ComponentHealth:
    name: str
    ok: bool
    detail: str
    latency_ms: int

    def as_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "detail": self.detail, "latency_ms": self.latency_ms}


def check_database() -> str:
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return f"{connections['default'].vendor} answers"
    finally:
        connections.close_all()  # this runs in a worker thread: don't leave its connection behind


def check_redis() -> str:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
        return f"Redis {client.info('server')['redis_version']} answers"
    finally:
        client.close()


def check_celery() -> str:
    """Up when the pipeline watcher ran lately; else down, saying whether no worker consumes the pipeline queue or
    beat does not tick.

    Beat sends the watcher to the pipeline queue and a worker consuming that queue runs it, so one fresh tick proves
    both without a broadcast: a worker busy with jobs answers `inspect` late, and the check must not flap under load.
    """
    from webapp.core.queue import app
    from webapp.pipelines.runtime import watcher_tick

    stale = settings.PIPELINE_BEAT_STALE_SECONDS
    with app.connection_for_write() as connection:
        try:
            connection.ensure_connection(max_retries=1, interval_start=0, timeout=1)
        except Exception:
            raise RuntimeError("the Celery broker (Redis) does not answer") from None
        tick = watcher_tick()
        if tick is not None and (age := time.time() - tick) <= stale:
            return f"the pipeline watcher ran {age:.0f} s ago on a worker of the '{settings.PIPELINE_QUEUE}' queue"
        queues = app.control.inspect(timeout=1.0, connection=connection).active_queues() or {}
    consumers = [name for name, bound in queues.items() if any(q.get("name") == settings.PIPELINE_QUEUE for q in bound)]
    if not consumers:
        if queues:
            raise RuntimeError(f"{len(queues)} worker(s) answer, none consumes the '{settings.PIPELINE_QUEUE}' queue")
        raise RuntimeError("no Celery worker answered within 1 s")
    if tick is None:
        raise RuntimeError("beat has never ticked (the pipeline watcher does not run)")
    raise RuntimeError(f"beat has not ticked for {time.time() - tick:.0f} s (the pipeline watcher does not run)")


def check_pipelines() -> str:
    """How many pipelines run and how many failed; down when one failed for good (no restart planned)."""
    from webapp.pipelines.models import Pipeline, PipelineStatus
    from webapp.pipelines.selectors import pipeline_status_counts

    try:
        counts = pipeline_status_counts()
        given_up = Pipeline.objects.filter(status=PipelineStatus.FAILED, restart_at__isnull=True).count()
    finally:
        connections.close_all()
    summary = (
        f"{counts['running']} running, {counts['deploy_requested']} deploying, {counts['stop_requested']} stopping, "
        f"{counts['failed']} failed"
    )
    if given_up:
        raise RuntimeError(f"{summary} ({given_up} not restarting)")
    return summary


def check_kafka() -> str:
    from clearflow_spec.connections import KafkaConnectionSpec
    from webapp.connections.kafka_client import check_connection

    info = check_connection(KafkaConnectionSpec(bootstrap_servers=settings.KAFKA_BOOTSTRAP_SERVERS), timeout=2.5)
    return f"{len(info.brokers)} broker(s), {info.topic_count} topic(s)"


def check_clickhouse() -> str:
    from clearflow_spec.connections import ClickHouseConnectionSpec
    from webapp.connections.clickhouse_client import check_connection

    info = check_connection(
        ClickHouseConnectionSpec(
            host=settings.CLICKHOUSE_HOST,
            port=settings.CLICKHOUSE_PORT,
            username=settings.CLICKHOUSE_USER,
            password=settings.CLICKHOUSE_PASSWORD,
        ),
        timeout=2.5,
    )
    return f"ClickHouse {info.version} answers"


def check_spark() -> str:
    """Spark needs Java locally; with a cluster master configured, the master must be reachable."""
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("Java is not installed (apt-get install -y openjdk-17-jre-headless)")
    output = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=3).stderr
    match = re.search(r'version "([^"]+)"', output)
    java_version = match.group(1) if match else "unknown version"
    master = settings.SPARK_MASTER
    if master.startswith("spark://"):
        import socket

        host, _, port = master.removeprefix("spark://").partition(":")
        try:
            socket.create_connection((host, int(port or 7077)), timeout=2).close()
        except OSError:
            raise RuntimeError("the Spark master does not answer") from None
        return f"Java {java_version}, Spark cluster master answers"
    return f"Java {java_version}, Spark runs locally ({master})"


CHECKS: dict[str, Callable[[], str]] = {
    "database": check_database,
    "redis": check_redis,
    "celery": check_celery,
    "kafka": check_kafka,
    "clickhouse": check_clickhouse,
    "spark": check_spark,
    "pipelines": check_pipelines,
}


def check_all(timeout: float = CHECK_TIMEOUT_SECONDS) -> list[ComponentHealth]:
    """Run every check at once; one that has not answered by `timeout` counts as down."""
    started = time.monotonic()
    executor = ThreadPoolExecutor(max_workers=len(CHECKS), thread_name_prefix="health")
    futures = {name: executor.submit(_timed, check) for name, check in CHECKS.items()}
    wait(futures.values(), timeout=timeout)
    executor.shutdown(wait=False, cancel_futures=True)
    results = []
    for name, future in futures.items():
        if not future.done():
            elapsed = int((time.monotonic() - started) * 1000)
            results.append(ComponentHealth(name, False, f"no answer within {timeout:.0f} s", elapsed))
            continue
        ok, detail, latency_ms = future.result()
        results.append(ComponentHealth(name, ok, detail, latency_ms))
    return results


def _timed(check: Callable[[], str]) -> tuple[bool, str, int]:
    started = time.monotonic()
    try:
        detail, ok = check(), True
    except Exception as error:  # a health check reports any failure; it never raises
        detail, ok = _without_addresses(str(error)) or type(error).__name__, False
    return ok, detail, int((time.monotonic() - started) * 1000)


_ADDRESS = re.compile(r"https?://\S+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?|\b[\w.-]+:\d{2,5}\b|\b(?:host|port)=\S+")


def _without_addresses(message: str) -> str:
    """Hosts and ports are not for an open endpoint; the operator finds them in the logs and settings."""
    return _ADDRESS.sub("<address>", message).strip()[:300]
