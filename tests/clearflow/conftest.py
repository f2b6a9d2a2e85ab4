"""The `clearflow` command and SDK against a real server: Django's live server (a thread of this process, on the
test database) with the session's Kafka, ClickHouse and Redis, and a real Celery worker where pipelines deploy.

`cli("apply", "-f", "pipelines/")` runs the installed command in a subprocess, as a user's shell would, with
CLEARFLOW_URL and CLEARFLOW_TOKEN set to the live server and the owner's token (`cli.env`), in `cli.cwd`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.webapp.conftest import api, ch_conn, clickhouse_target, kafka_conn, other, owner, topics  # noqa: F401
from tests.worker.conftest import celery_worker, worker_env  # noqa: F401
from webapp.api.tokens import api_token_create

BIN = Path(sys.executable).parent  # the project's virtualenv: `make install` put `clearflow` here
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Cli:
    env: dict[str, str]
    cwd: Path

    def __call__(self, *args: str, input: str | None = None, env: dict[str, str] | None = None, timeout: float = 120):
        return subprocess.run(
            ["clearflow", *args],
            input=input,
            env={**self.env, **(env or {})},
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def write(self, name: str, text: str) -> Path:
        path = self.cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


@pytest.fixture
def server(transactional_db, live_server, settings, redis_url) -> str:
    """The web app's address; its metrics and logs come from the session's Redis. The test database is set up
    before the (session-long) live server, so that it is also dropped after the server's connections are closed."""
    settings.REDIS_URL = redis_url
    return live_server.url


def shell_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A user's environment: a home of its own (so no config from elsewhere), the virtualenv's commands first."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLEARFLOW_", "XDG_CONFIG"))}
    return {**env, "HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **extra}


@pytest.fixture
def token(owner) -> str:  # noqa: F811 - the fixture
    return api_token_create(user=owner, name="cli tests")[1]


@pytest.fixture
def cli(server, token, tmp_path, kafka_bootstrap, clickhouse_server) -> Cli:
    work = tmp_path / "work"
    work.mkdir()
    env = shell_env(
        tmp_path,
        CLEARFLOW_URL=server,
        CLEARFLOW_TOKEN=token,
        KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap,
        CLICKHOUSE_HOST=clickhouse_server.host,
        CLICKHOUSE_PORT=str(clickhouse_server.port),
    )
    return Cli(env, work)
