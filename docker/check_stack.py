"""The services and the pipeline of `docker/check.sh`, run with the repository's own Python (the local stack's).

`services DIR`: Kafka, ClickHouse and Redis from the local stack (`localstack.service_defs`) and a PostgreSQL
cluster of its own, all on free ports; writes DIR/app.env (mode 0600: the containers' environment, secrets
included) and DIR/ports.json once they answer, then waits for SIGTERM and stops them all.

`pipeline DIR TOKEN_FILE`: through the web app's REST API, makes a Kafka and a ClickHouse connection and a
pipeline, produces EVENTS unique events and DUPLICATES re-sent ones, deploys, and waits until the table holds
each key exactly once. Exit 0 only then; otherwise the reason in words.
"""

from __future__ import annotations

import json
import secrets
import signal
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from soak import pipeline_spec  # noqa: E402 - the pipeline a new user would create, as the benches deploy it

from localstack import processes, service_defs  # noqa: E402
from tests.throwaway_postgres import ThrowawayPostgres  # noqa: E402

EVENTS = 2000
DUPLICATES = 500
ROWS_TIMEOUT = 600  # seconds from the deploy: a cold job start on a Spark cluster, then its first batches
# The compose file's list, without loopback: these containers share the host's network, so this deployment's own
# Kafka and ClickHouse are on 127.0.0.1 (the configured endpoints stay allowed with private networks off).
FORBIDDEN_NETWORKS = "169.254.0.0/16,fe80::/10,fd00:ec2::254/128,100.100.100.200/32"


def say(message: str) -> None:
    print(f"check: {message}", flush=True)


def serve(out_dir: Path) -> int:
    ports = {name: processes.free_port() for name in ("kafka", "clickhouse", "redis", "web", "spark", "spark_ui")}
    ports["spark_worker_ui"] = processes.free_port()
    postgres = ThrowawayPostgres()
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with processes.ProcessGroup(out_dir / "logs", end_with_parent=True) as group:
        try:
            postgres.start()
            database_url = postgres_database(postgres)
            group.start(service_defs.redis(port=ports["redis"], data_dir=out_dir / "redis"))
            group.start(service_defs.kafka_broker(port=ports["kafka"], data_dir=out_dir / "kafka"))
            group.start(service_defs.clickhouse(port=ports["clickhouse"], data_dir=out_dir / "clickhouse"))
            write_env(out_dir, ports, database_url)
            (out_dir / "ports.json").write_text(json.dumps(ports))
            say(f"services up: Kafka :{ports['kafka']}, ClickHouse :{ports['clickhouse']}, Redis :{ports['redis']}")
            while not stopping:
                if exited := group.exited():
                    say(f"{exited[0].name} stopped on its own; last lines:\n{exited[0].log_tail()}")
                    return 1
                time.sleep(0.5)
        finally:
            group.stop_all()
            postgres.remove()
    return 0


def postgres_database(postgres: ThrowawayPostgres) -> str:
    import psycopg

    with psycopg.connect(f"postgres://postgres@127.0.0.1:{postgres.port}/postgres", autocommit=True) as conn:
        conn.execute("CREATE DATABASE clearflow")
    return f"postgres://postgres@127.0.0.1:{postgres.port}/clearflow"


def write_env(out_dir: Path, ports: dict[str, int], database_url: str) -> None:
    from cryptography.fernet import Fernet

    redis = f"redis://127.0.0.1:{ports['redis']}"
    env = {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "CLEARFLOW_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "DJANGO_DEBUG": "false",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_HTTPS": "false",  # no nginx in front: plain HTTP on the host's loopback
        "CLEARFLOW_PROXY_COUNT": "0",
        "CLEARFLOW_FORBIDDEN_NETWORKS": FORBIDDEN_NETWORKS,
        "CLEARFLOW_ALLOW_PRIVATE_NETWORKS": "false",
        "DATABASE_URL": database_url,
        "REDIS_URL": f"{redis}/0",
        "CELERY_BROKER_URL": f"{redis}/1",
        "CELERY_RESULT_BACKEND": f"{redis}/2",
        "CLEARFLOW_CACHE_URL": f"{redis}/3",
        "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{ports['kafka']}",
        "CLICKHOUSE_HOST": "127.0.0.1",
        "CLICKHOUSE_PORT": str(ports["clickhouse"]),
        "SPARK_MASTER": f"spark://127.0.0.1:{ports['spark']}",
        "CLEARFLOW_CHECKPOINT_ROOT": "/var/lib/clearflow-checkpoints",
        "CLEARFLOW_RUN_ROOT": "/var/lib/clearflow/runs",
        "CLEARFLOW_PIPELINE_QUEUE": "pipelines",
        "CLEARFLOW_ALERT_QUEUE": "celery",
        "CLEARFLOW_SPARK_CONF": "spark.executor.memory=1g",
        "CLEARFLOW_STANDBY": "0",
        "WEB_PORT": str(ports["web"]),
    }
    path = out_dir / "app.env"
    path.touch(mode=0o600)
    path.write_text("".join(f"{key}={value}\n" for key, value in env.items()))


class Api:
    def __init__(self, port: int, token: str) -> None:
        self.base, self.token = f"http://127.0.0.1:{port}/api/v1/", token

    def __call__(self, method: str, path: str, body: dict | None = None) -> Any:
        request = urllib.request.Request(  # noqa: S310 - this machine's web app
            self.base + path,
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - this machine's web app
                return json.load(response)
        except urllib.error.HTTPError as error:
            raise SystemExit(f"check: {method} /api/v1/{path} answered {error.code}: {error.read().decode()}") from None


def produce(bootstrap: str, topic: str) -> list[str]:
    """EVENTS events with unique ids, then DUPLICATES of them sent again byte for byte; the ids."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the topic exists: its handle serves the call
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    payloads, ids = [], []
    for number in range(EVENTS):
        event_id = str(uuid.uuid4())
        ids.append(event_id)
        event = {"id": event_id, "produced_at": "2026-12-03T12:00:00Z", "user": f"u{number % 50}", "amount": number}
        payloads.append((event_id.encode(), json.dumps(event).encode()))
    for key, value in payloads + payloads[:DUPLICATES]:
        producer.produce(topic, key=key, value=value)
    if producer.flush(60):
        raise SystemExit("check: Kafka did not take every event within 60 s")
    return ids


def pipeline(out_dir: Path, token_file: Path) -> int:
    import clickhouse_connect

    ports = json.loads((out_dir / "ports.json").read_text())
    api = Api(ports["web"], token_file.read_text().strip())
    bootstrap = f"127.0.0.1:{ports['kafka']}"
    topic, table = f"check-{uuid.uuid4().hex[:8]}", f"check_{uuid.uuid4().hex[:8]}"
    ids = produce(bootstrap, topic)
    say(f"produced {EVENTS} unique events and {DUPLICATES} duplicates to {topic}")
    kafka = api("POST", "connections/kafka/", {"name": "check kafka", "bootstrap_servers": bootstrap})
    clickhouse = api(
        "POST", "connections/clickhouse/", {"name": "check ch", "host": "127.0.0.1", "port": ports["clickhouse"]}
    )
    body = {"name": "check", "kafka_connection": kafka["id"], "clickhouse_connection": clickhouse["id"]}
    spec = pipeline_spec(topic, table, window="1h", time_mode="ingestion")
    created = api("POST", "pipelines/", {**body, "spec": spec})
    api("POST", f"pipelines/{created['id']}/deploy/")
    say(f"deployed pipeline {created['id']} into table {table}; waiting for {EVENTS} rows")
    client = clickhouse_connect.get_client(host="127.0.0.1", port=ports["clickhouse"])
    deadline, rows, keys, status = time.monotonic() + ROWS_TIMEOUT, 0, 0, {}
    while time.monotonic() < deadline:
        status = api("GET", f"pipelines/{created['id']}/status/")
        if status["status"] == "failed" and status.get("restart_at") is None:
            say(f"the pipeline failed: {status.get('status_message')}")
            return 1
        if client.command(f"EXISTS TABLE default.{table}") == 1:
            rows, keys = client.query(f"SELECT count(), uniqExact(id) FROM default.{table}").result_rows[0]
            if rows >= EVENTS:
                break
        time.sleep(3)
    stored = {str(row[0]) for row in client.query(f"SELECT id FROM default.{table}").result_rows} if rows else set()
    if rows == keys == EVENTS and stored == set(ids):
        time.sleep(10)  # a late duplicate would show now
        rows = client.command(f"SELECT count() FROM default.{table}")
        if rows == EVENTS:
            say(f"exact: {rows} rows in {table}, each of the {EVENTS} keys once ({DUPLICATES} duplicates dropped)")
            return 0
    say(
        f"not exact: {rows} rows and {keys} distinct keys in {table} (expected {EVENTS} of each, every produced id);"
        f" the pipeline is {status.get('status')}: {status.get('status_message')}"
    )
    return 1


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "services":
        return serve(Path(argv[1]))
    if len(argv) == 3 and argv[0] == "pipeline":
        return pipeline(Path(argv[1]), Path(argv[2]))
    print("usage: check_stack.py services DIR | pipeline DIR TOKEN_FILE", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
