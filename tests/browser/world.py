"""A pipeline the way a person finds it after a while, for the browser tests: its topic and table, metrics the job
published (a start-up backlog, then a steady rate), dead letters written by the engine's own sink with the
engine's reasons, a run and its status history, and the job log with Spark's lines in it (tests/data/spark_job.log,
the log of a real job). Also: logging in, at either screen size."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from clearflow_spec.protocol import job_log_key
from spark_jobs.metrics import BatchMetrics, MetricsPublisher
from tests.pipeline_states import walk_to
from tests.webapp.conftest import orders_spec, produce_records
from tests.webapp.pipelines.dead_letter_helpers import Event, write_dead_letters
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.models import Pipeline, PipelineRun
from webapp.pipelines.services import pipeline_create

JOB_LOG = Path(__file__).resolve().parents[1] / "data" / "spark_job.log"
PASSWORD = "analyst-pass-123"
STEADY_RATE = 2_000.0  # events/s of the steady batches
BACKLOG_RATE = 95_000.0  # events/s of the start-up batch that read the topic's backlog
STEADY_BATCHES = 40


@dataclass
class World:
    user: object
    pipeline: Pipeline
    topic: str
    database: str
    publisher: MetricsPublisher


def order_event(i: int, order_id: str | None = None) -> str:
    return json.dumps(
        {
            "order_id": order_id or str(uuid.UUID(int=9000 + i, version=4)),
            "seq": i,
            "amount": 12.5 + i,
            "customer": {"name": f"Customer {i}", "address": {"country": "PT", "city": "Lisbon"}},
        }
    )


# Dead letters as the engine writes them: the raw value and the reason its job gave (spark_jobs.transforms). The
# last two were written by an earlier version of the spec (its `seq` column was an Int32 and `seq` a string):
# today's spec writes the first, and refuses the second for another reason.
GOOD_ID = str(uuid.UUID(int=77, version=4))
DEAD_LETTERS = [
    Event("", 0, 40, order_event(1, "oops-1"), "field 'order_id': cannot convert 'oops-1' to uuid"),
    Event("", 1, 41, order_event(2, "oops-2"), "field 'order_id': cannot convert 'oops-2' to uuid"),
    Event("", 0, 42, '{"order_id": "' + GOOD_ID + '", "seq": 7, "amount": "n/a"}',
          "field 'amount': cannot convert 'n/a' to float"),
    Event("", 1, 43, "not json at all {", "invalid JSON"),
    Event("", 0, 44, order_event(3_000_000_000), "column 'seq': cannot write '3000000000' to Int32"),
    Event("", 1, 45, '{"order_id": "' + GOOD_ID + '", "seq": "7b"}', "column 'seq': cannot write '7b' to Int32"),
]  # fmt: skip
SAME_REASON = 4  # fail again, for the reason they failed for
OTHER_REASON = 1  # "field 'seq': cannot convert '7b' to int"
PASSING = 1


def batch(pipeline: str, topic: str, batch_id: int, at: datetime, *, rate: float, dead: int = 0) -> BatchMetrics:
    rows = int(rate * 2)
    return BatchMetrics(
        pipeline=pipeline,
        batch_id=batch_id,
        timestamp=at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        input_rows=rows,
        duplicates_dropped=rows // 10,
        rows_written=rows - rows // 10 - dead - 5,
        dead_letters=dead,
        filtered_out=5,
        batch_duration_ms=400 + 7 * (batch_id % 5),
        lag={topic: {"0": 40 + batch_id % 7, "1": 30 + batch_id % 5}},
        total_lag=70 + batch_id % 7 + batch_id % 5,
        input_rows_per_second=rate + 10 * (batch_id % 4),
        processed_rows_per_second=rate * 1.2,
    )


def build_world(*, kafka_bootstrap: str, clickhouse_server, redis_url: str, username: str = "analyst") -> World:
    """The user (staff: the admin link shows), both connections, and a running pipeline with history."""
    import clickhouse_connect
    import redis

    user = get_user_model().objects.create_user(username, password=PASSWORD, is_staff=True, is_superuser=True)
    topic = f"orders_{uuid.uuid4().hex[:6]}"
    produce_records(kafka_bootstrap, topic, [], partitions=2)
    database = f"cf_pages_{uuid.uuid4().hex[:6]}"
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    try:
        client.command(f"CREATE DATABASE `{database}`")
    finally:
        client.close()
    pipeline = pipeline_create(
        owner=user,
        name="orders-to-clickhouse",
        kafka_connection=kafka_connection_create(
            owner=user, data={"name": "Local broker", "bootstrap_servers": kafka_bootstrap}
        ),
        clickhouse_connection=clickhouse_connection_create(
            owner=user,
            data={"name": "Local ClickHouse", "host": clickhouse_server.host, "port": clickhouse_server.port},
        ),
        spec=orders_spec(topic, database, create_table=True),
    )
    write_dead_letters(pipeline, [Event(topic, e.partition, e.offset, e.raw, e.reason) for e in DEAD_LETTERS])

    # The job started 40 minutes ago on a backlog (one big batch), then ran steadily (a batch a minute here, the
    # last a few seconds ago).
    publisher = MetricsPublisher(pipeline.job_name, redis_url)
    start = datetime.now(UTC) - timedelta(minutes=STEADY_BATCHES, seconds=5)
    publisher.publish(batch(pipeline.job_name, topic, 0, start, rate=BACKLOG_RATE))
    for i in range(1, STEADY_BATCHES + 1):
        publisher.publish(batch(pipeline.job_name, topic, i, start + timedelta(minutes=i), rate=STEADY_RATE,
                                dead=2 if i == 30 else 0))  # fmt: skip

    walk_to(pipeline, "running", message="the job's streaming query started")
    PipelineRun.objects.create(
        pipeline=pipeline,
        version=pipeline.current_version,
        host="worker-1.internal.example",
        pid=31156,
        spark_app_id="local-1795618739324",
        started_at=start - timedelta(minutes=1),
        running_at=start,
    )
    store = redis.Redis.from_url(redis_url)
    try:
        store.set(job_log_key(pipeline.job_name), JOB_LOG.read_text())
    finally:
        store.close()
    return World(user=user, pipeline=pipeline, topic=topic, database=database, publisher=publisher)


def log_in(page: Page, base_url: str, username: str = "analyst", *, next_path: str = "/") -> None:
    page.goto(f"{base_url}/login/?next={next_path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_label("Username")).to_have_count(0)
