"""The environment of a `make up` under test: every address on a free port (never the default 8000, 9092, 8123,
6379: someone's own stack may run on this machine), its state in `var_dir`, a database of its own."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from localstack.processes import free_port


@dataclass(frozen=True)
class StackEnv:
    env: dict[str, str]
    ports: dict[str, int]  # kafka, clickhouse, redis, web
    database: str


def stack_env(var_dir: Path, *, database_prefix: str, standby_jobs: str = "1") -> StackEnv:
    """`standby_jobs`: CLEARFLOW_STANDBY for the stack; "auto" is the product's pool, as the benches measure it."""
    ports = {name: free_port() for name in ("kafka", "clickhouse", "redis", "web", "registry")}
    database = f"{database_prefix}_{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "CLEARFLOW_VAR_DIR": str(var_dir),
        "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{ports['kafka']}",
        "CLICKHOUSE_HOST": "127.0.0.1",
        "CLICKHOUSE_PORT": str(ports["clickhouse"]),
        "REDIS_URL": f"redis://127.0.0.1:{ports['redis']}/0",
        "WEB_BIND": f"127.0.0.1:{ports['web']}",
        "SCHEMA_REGISTRY_URL": f"http://127.0.0.1:{ports['registry']}/apis/ccompat/v7",
        "DATABASE_URL": f"postgres://clearflow@127.0.0.1:5432/{database}",
        # Tests: one standby, not the host's pool of 4: `make up` waits for its pool before the banner, and these
        # tests deploy one pipeline at a time (each JVM start is CPU the other tests of the run wait for).
        "CLEARFLOW_STANDBY": standby_jobs,
    }
    # Not inherited from a `make test` that runs the tests: a nested make would take itself for a sub-make.
    for name in ("DJANGO_SETTINGS_MODULE", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(name, None)
    return StackEnv(env, ports, database)
