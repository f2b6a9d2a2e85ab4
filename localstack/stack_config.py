"""Where the local stack runs: its addresses, read from the same environment variables docker-compose.yml sets
(`StackConfig.from_env`), with `make up`'s defaults, and its var directory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from localstack import service_defs

REPO_ROOT = Path(__file__).resolve().parents[1]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
# Set for the stack `make up DETACH=1` starts in the background (its banner says how to stop it).
DETACHED_VARIABLE = "CLEARFLOW_UP_DETACHED"


@dataclass(frozen=True)
class StackConfig:
    var_dir: Path
    kafka_host: str
    kafka_port: int
    clickhouse_host: str
    clickhouse_port: int
    redis_host: str
    redis_port: int
    web_host: str
    web_port: int
    database_url: str
    registry_host: str = "127.0.0.1"
    registry_port: int = 8081

    @classmethod
    def from_env(cls) -> StackConfig:
        env = os.environ
        kafka_host, kafka_port = _host_port(env.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092").split(",")[0])
        redis = urlsplit(env.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
        web_host, web_port = _host_port(env.get("WEB_BIND", "127.0.0.1:8000"))
        registry = urlsplit(env.get("SCHEMA_REGISTRY_URL", f"http://127.0.0.1:8081{service_defs.REGISTRY_API_PATH}"))
        return cls(
            var_dir=Path(env.get("CLEARFLOW_VAR_DIR", str(REPO_ROOT / "var"))).resolve(),
            kafka_host=kafka_host,
            kafka_port=kafka_port,
            clickhouse_host=env.get("CLICKHOUSE_HOST", "127.0.0.1"),
            clickhouse_port=int(env.get("CLICKHOUSE_PORT", "8123")),
            redis_host=redis.hostname or "127.0.0.1",
            redis_port=redis.port or 6379,
            web_host=web_host,
            web_port=web_port,
            database_url=env.get("DATABASE_URL", "postgres://clearflow@127.0.0.1:5432/clearflow"),
            registry_host=registry.hostname or "127.0.0.1",
            registry_port=registry.port or 8081,
        )

    @property
    def url(self) -> str:
        return f"http://{self.web_host}:{self.web_port}"

    @property
    def registry_url(self) -> str:
        return f"http://{self.registry_host}:{self.registry_port}{service_defs.REGISTRY_API_PATH}"


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.strip().rpartition(":")
    return host or "127.0.0.1", int(port)
