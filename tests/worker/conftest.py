"""A real Celery worker (with beat) as a separate process, on the session's Redis, against the test database.

Tests here are transactional (the worker must see committed rows). Jobs are real Spark jobs reading the session's
Kafka broker and writing its ClickHouse; each test's jobs are killed at the end if still running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The users, API client and saved connections of the web app's tests.
from tests.webapp.conftest import api, ch_conn, kafka_conn, owner  # noqa: F401

REPO_ROOT = Path(__file__).resolve().parents[2]


class CeleryWorker:
    """`celery -A worker.celery worker -B` in its own session, with the environment the test gives it."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"worker-{self.starts}.log"

    def start(self) -> None:
        from tests.spark_jobs.engine_helpers import wait_for

        self.starts += 1
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable, "-m", "celery", "-A", "worker.celery", "worker", "-B",
                    "-Q", f"{self.env['CLEARFLOW_PIPELINE_QUEUE']},celery",
                    "--concurrency", "2", "--loglevel", "INFO",
                    "-n", f"test-{uuid.uuid4().hex[:8]}@%h",
                    "--schedule", str(self.log_dir / f"beat-schedule-{self.starts}"),
                ],
                cwd=REPO_ROOT,
                env={**os.environ, **self.env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        wait_for(lambda: self._ready(), timeout=90)

    def _ready(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self.log_tail()
        return " ready." in self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        """A warm shutdown (SIGTERM), as a deploy or an upgrade of the worker does."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return f"postgres://{s['USER']}{password}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture
def worker_env(settings: Any, redis_url: str, tmp_path: Path) -> dict[str, str]:
    """What the worker process runs with; tests may change it before `celery_worker.start()`."""
    queue = f"pipelines-{uuid.uuid4().hex[:8]}"  # a queue of this test's own: no other worker takes its tasks
    settings.PIPELINE_QUEUE = queue
    settings.REDIS_URL = redis_url
    return {
        "DATABASE_URL": database_url(),
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "CELERY_RESULT_BACKEND": redis_url,
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "CLEARFLOW_ENCRYPTION_KEY": ",".join(settings.FIELD_ENCRYPTION_KEYS),
        "CLEARFLOW_VAR_DIR": str(tmp_path / "var"),
        "CLEARFLOW_CHECKPOINT_ROOT": str(tmp_path / "checkpoints"),
        "CLEARFLOW_RUN_ROOT": str(tmp_path / "runs"),
        "CLEARFLOW_PIPELINE_QUEUE": queue,
        "CLEARFLOW_WATCH_INTERVAL": "1",
        "CLEARFLOW_RESTART_BACKOFF": "1",
        "CLEARFLOW_RESTART_MAX_ATTEMPTS": "3",
        "CLEARFLOW_STOP_TIMEOUT": "60",
        "CLEARFLOW_TRIGGER_INTERVAL": "200 milliseconds",
        "CLEARFLOW_DRIVER_MEMORY": "1g",
        "CLEARFLOW_SPARK_CONF": "spark.ui.enabled=false",
        "SPARK_MASTER": "local[2]",
        # No standby job (a JVM and session kept up for the next deploy) unless a test asks for one
        # (tests/worker/test_standby.py): each test's worker would start its own, 1 GB and a JVM start each, and
        # a deploy would wait for it; cold starts are what most tests exercise.
        "CLEARFLOW_STANDBY": "0",
    }


@pytest.fixture
def celery_worker(worker_env: dict[str, str], celery_app: Any, tmp_path: Path) -> Iterator[CeleryWorker]:
    """A worker, not started: call `.start()` (after changing `worker_env` if needed). Stopped at the end, and
    every job it started is killed."""
    worker = CeleryWorker(worker_env, tmp_path)
    yield worker
    worker.stop()
    _kill_jobs(Path(worker_env["CLEARFLOW_RUN_ROOT"]))


@pytest.fixture(scope="session")
def ch(clickhouse_server):
    import clickhouse_connect

    return clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)


@pytest.fixture
def topic(kafka_bootstrap):
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"runs-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    return name


def _kill_jobs(run_root: Path) -> None:
    """Every job the test's worker started: its runs', and the standby jobs that took no pipeline."""
    import psutil

    from webapp.pipelines.models import PipelineRun
    from worker import jobs

    for handle in jobs.find_jobs(run_root):
        jobs.kill_session(handle.pid)  # its group and Spark's Python daemon, which leaves the group

    for pid, started in PipelineRun.objects.values_list("pid", "process_started"):
        try:
            process = psutil.Process(pid)
            if started is None or abs(process.create_time() - started) < 0.05:
                os.killpg(pid, signal.SIGKILL)
        except (psutil.Error, ProcessLookupError, TypeError):
            pass
