"""docs/cli.md, run as written: log in, apply, export, deploy with a real worker and Spark job, watch, dead
letters, mistakes, the Python SDK, stop and delete, an Avro pipeline with its schema registry; then what a user
would check in ClickHouse and on the server."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from clearflow import Client
from localstack.demo_data import run as demo_data
from tests.clearflow.conftest import REPO_ROOT, shell_env
from tests.clearflow.doc_examples import DocRun
from tests.spark_jobs.engine_helpers import JOB_TIMEOUT, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]

DOC = REPO_ROOT / "docs" / "cli.md"
EVENTS = 1000
BAD_EVENTS = [b"not json", b'{"event_id": "abc", "email": "ada@example.com"}']


def produce_demo_events(bootstrap: str) -> None:
    """What `make demo-data` sends (sign-ups, about 10% repeated), and two events the job cannot use."""
    from confluent_kafka import Producer

    demo_data(
        bootstrap_servers=bootstrap,
        topic="users",
        second_topic="users_crm",
        rate=0,
        count=EVENTS,
        duplicate_delay=(0.0, 0.01),
        seed=22,
    )
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in BAD_EVENTS:
        producer.produce("users", value=value)
    assert producer.flush(10) == 0


def count(ch, sql: str) -> int:
    return int(ch.query(sql).result_rows[0][0])


def test_every_example_of_the_cli_page_runs_as_written(
    server, token, tmp_path, kafka_bootstrap, clickhouse_server, schema_registry_url, celery_worker
):
    import clickhouse_connect

    ch = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    produce_demo_events(kafka_bootstrap)
    celery_worker.start()
    work = tmp_path / "work"
    work.mkdir()
    env = shell_env(
        tmp_path,
        KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap,
        CLICKHOUSE_HOST=clickhouse_server.host,
        CLICKHOUSE_PORT=str(clickhouse_server.port),
        SCHEMA_REGISTRY_URL=schema_registry_url,
    )

    def caught_up() -> bool:  # the job's metrics say every event was read and written
        with Client(server, token) as client:
            return client.status("signups").rows_written >= EVENTS

    def dead_letters_written() -> bool:
        exists = count(ch, "SELECT count() FROM system.tables WHERE database = 'default' AND name = 'signups_dlq'")
        return bool(exists) and count(ch, "SELECT count() FROM default.signups_dlq") >= len(BAD_EVENTS)

    page = DocRun(
        cwd=work,
        env=env,
        terminal_answers=[("ClearFlow URL", server), ("API token", token), ("Workspace", "")],
        before={
            # A reader looks at the numbers once the job has caught up with the topic.
            "clearflow status signups": lambda: wait_for(caught_up, timeout=JOB_TIMEOUT),
            "clearflow dlq list signups": lambda: wait_for(dead_letters_written, timeout=JOB_TIMEOUT),
        },
    )
    # The page's files name the addresses of `make up`; the test's services listen elsewhere.
    text = DOC.read_text().replace("127.0.0.1:9092", kafka_bootstrap)
    text = text.replace(
        "host: 127.0.0.1\nport: 8123", f"host: {clickhouse_server.host}\nport: {clickhouse_server.port}"
    )
    text = text.replace("http://127.0.0.1:8081/apis/ccompat/v7", schema_registry_url)
    page.run(text, source="docs/cli.md")

    config = Path(env["HOME"]) / ".config" / "clearflow" / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    # Exactly once: every sign-up once, the repeats dropped.
    assert count(ch, "SELECT count() FROM default.signups") == EVENTS
    assert count(ch, "SELECT uniqExact(event_id) FROM default.signups") == EVENTS

    transcript = dict(page.transcript)
    status = transcript["clearflow status signups"]
    written = int(re.search(r"rows written\s+([\d,]+)", status).group(1).replace(",", ""))
    assert written == EVENTS
    assert int(re.search(r"duplicates\s+([\d,]+) dropped", status).group(1).replace(",", "")) > 0
    watch = transcript["clearflow status signups --watch"]
    assert "rows/s" in watch and re.search(r"\x1b\[\d+F\x1b\[J", watch), watch
    assert transcript["clearflow logs signups --follow"].strip(), "no log line followed"
    assert json.loads(transcript["clearflow status signups --output json"])["rows_written"] == EVENTS

    # The Avro pipeline reads through the registry its file names; its export names it too.
    with Client(server, token) as client:
        orders = client.pipeline("orders")
        exported = client.export("orders")
    assert orders.spec["source"]["schema_registry"]["url"] == schema_registry_url
    assert exported[-1]["schema_registry_connection"] == "local-registry"
    assert exported[2] == {
        "kind": "schema-registry-connection",
        "name": "local-registry",
        "url": schema_registry_url,
        "verify": True,
    }
