"""The pipeline page in Chromium: live charts from the metrics the job's publisher keeps in Redis, totals with
dead letters, and the dead-letter card (browse, replay). Screenshots go to test-artifacts/observe/."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from spark_jobs.metrics import BatchMetrics, MetricsPublisher
from tests.webapp.conftest import orders_spec, produce_records
from tests.webapp.pipelines.dead_letter_helpers import Event, write_dead_letters
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.services import pipeline_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "observe"
BATCHES = 8
LIVE = 30_000  # ms to wait for a polled part of a page (the list every 10 s, the metrics every 5 s) on a busy machine


def batch(batch_id: int, at: datetime, topic: str, *, dead_letters: int = 0) -> BatchMetrics:
    return BatchMetrics(
        pipeline="orders",
        batch_id=batch_id,
        timestamp=at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        input_rows=1000 + 50 * (batch_id % 3),
        duplicates_dropped=90 + 10 * (batch_id % 2),
        rows_written=900,
        dead_letters=dead_letters,
        filtered_out=5,
        batch_duration_ms=400 + 20 * batch_id,
        lag={topic: {"0": max(0, 400 - 50 * batch_id), "1": max(0, 300 - 40 * batch_id)}},
        total_lag=max(0, 400 - 50 * batch_id) + max(0, 300 - 40 * batch_id),
        input_rows_per_second=2000.0 + 100 * batch_id,
        processed_rows_per_second=2500.0,
    )


def test_the_pipeline_page_charts_its_metrics_and_lists_its_dead_letters(
    page: Page, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings
):
    import clickhouse_connect

    settings.REDIS_URL = redis_url
    user = get_user_model().objects.create_user("watcher", password="watcher-pass-123")
    topic = f"orders_{uuid.uuid4().hex[:6]}"
    produce_records(kafka_bootstrap, topic, [], partitions=2)
    database = f"cf_observe_{uuid.uuid4().hex[:6]}"
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    client.command(f"CREATE DATABASE `{database}`")
    client.close()
    pipeline = pipeline_create(
        owner=user,
        name="orders",
        kafka_connection=kafka_connection_create(owner=user, data={"name": "k", "bootstrap_servers": kafka_bootstrap}),
        clickhouse_connection=clickhouse_connection_create(
            owner=user, data={"name": "c", "host": clickhouse_server.host, "port": clickhouse_server.port}
        ),
        spec=orders_spec(topic, database, create_table=True),
    )
    bad = [Event(topic, i % 2, 40 + i, f'{{"order_id": "oops-{i}"}}', "order_id: not a UUID") for i in range(3)]
    write_dead_letters(pipeline, bad)
    publisher = MetricsPublisher(pipeline.job_name, redis_url)
    start = datetime.now(UTC) - timedelta(seconds=BATCHES * 2)
    for i in range(BATCHES):
        publisher.publish(batch(i, start + timedelta(seconds=2 * i), topic, dead_letters=3 if i == 2 else 0))

    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("watcher")
    page.get_by_label("Password").fill("watcher-pass-123")
    page.get_by_role("button", name="Log in").click()

    # The list: status badge and current throughput.
    row = page.locator("#pipelines tbody tr", has_text="orders")
    expect(row.locator(".badge")).to_have_text("Draft")
    expect(row.locator(".throughput")).to_have_text("2,700 events/s")
    publisher.publish(batch(BATCHES, datetime.now(UTC), topic))  # the list follows without a reload
    expect(row.locator(".throughput")).to_have_text("2,800 events/s", timeout=LIVE)
    row.get_by_role("link", name="orders").click()

    # Totals include the dead letters; every chart is drawn with data.
    expect(page.locator("#total-dead-letters")).to_have_text("3")
    charts = page.locator("#metrics-charts figure")
    expect(charts).to_have_count(6)
    expect(page.locator("#metrics-charts canvas")).to_have_count(6)
    expect(page.locator("#chart-rows .u-legend")).to_contain_text("Dead letters")
    expect(page.locator("#chart-lag .u-legend")).to_contain_text(f"{topic} / 1")
    expect(page.locator("#chart-duplicates .u-legend")).to_contain_text("Share %")

    # The dead letters, newest first, with reason, topic, partition, offset.
    expect(page.locator("#dead-letter-rows tbody tr")).to_have_count(3)
    expect(page.locator("#dead-letter-table")).to_have_text(f"{database}.orders_dlq")
    first = page.locator("#dead-letter-rows tbody tr").first
    expect(first).to_contain_text("order_id: not a UUID")
    expect(first).to_contain_text(topic)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "pipeline-page.png"), full_page=True)

    # Live: a new batch shows up in the totals and the charts without a reload.
    publisher.publish(batch(BATCHES + 1, datetime.now(UTC), topic, dead_letters=2))
    expect(page.locator("#total-dead-letters")).to_have_text("5", timeout=LIVE)
    page.wait_for_function(
        "n => document.querySelector('#metrics-charts')._charts.records.length === n", arg=BATCHES + 2, timeout=LIVE
    )

    # Replay, confirmed in its dialog: the dead letters go back to their topic and leave the list.
    page.locator("#dead-letters-replay").click()
    expect(page.locator("#replay-count")).to_have_text("3")
    page.locator("#replay-confirm").click()
    expect(page.locator(".flash")).to_contain_text("Replayed 3 dead letters to their topics.")
    expect(page.locator("#dead-letter-count")).to_have_text("0")
    page.screenshot(path=str(ARTIFACTS / "after-replay.png"), full_page=True)
