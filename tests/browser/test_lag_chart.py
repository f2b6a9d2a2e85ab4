"""The pipeline page's lag chart draws the lag the worker reads from the broker (worker.lag), so that a job that
publishes no batch (stuck, or in a long first batch) still shows its lag growing, without a reload."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from spark_jobs.metrics import BatchMetrics, MetricsPublisher
from tests.pipeline_states import walk_to
from tests.spark_jobs.engine_helpers import produce
from tests.webapp.conftest import orders_spec, produce_records
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.models import PipelineStatus
from webapp.pipelines.services import pipeline_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LIVE = 30_000


def test_the_lag_chart_follows_the_brokers_while_no_batch_comes(
    page: Page, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings
):
    from worker import lag, redis_state

    settings.REDIS_URL = redis_url
    redis_state._client = None  # the worker's client, on this test's Redis
    user = get_user_model().objects.create_user("lagger", password="lagger-pass-123")
    topic = f"orders_{uuid.uuid4().hex[:6]}"
    produce_records(kafka_bootstrap, topic, [json.dumps({"n": i}).encode() for i in range(40)], partitions=2)
    pipeline = pipeline_create(
        owner=user,
        name="stuck",
        kafka_connection=kafka_connection_create(owner=user, data={"name": "k", "bootstrap_servers": kafka_bootstrap}),
        clickhouse_connection=clickhouse_connection_create(
            owner=user, data={"name": "c", "host": clickhouse_server.host, "port": clickhouse_server.port}
        ),
        spec=orders_spec(topic, "default"),
    )
    walk_to(pipeline, PipelineStatus.RUNNING, deployed_version=pipeline.current_version)
    publisher = MetricsPublisher(pipeline.job_name, redis_url)
    start = datetime.now(UTC) - timedelta(seconds=30)
    for i in range(3):  # two batches long ago, then nothing: the job is stuck
        publisher.publish(
            BatchMetrics(
                pipeline="stuck", batch_id=i, timestamp=(start + timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),  # noqa: E501
                input_rows=10, duplicates_dropped=0, rows_written=10, dead_letters=0, filtered_out=0,
                batch_duration_ms=300, lag={topic: {"0": 0, "1": 0}}, total_lag=0,
            )
        )  # fmt: skip
    assert lag.follow(pipeline) and lag.follow(pipeline)

    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("lagger")
    page.get_by_label("Password").fill("lagger-pass-123")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/pipelines/{pipeline.pk}/")
    expect(page.locator("#chart-lag canvas")).to_have_count(1)
    last_total = "el => { const r = el._charts.lagReadings; return r.length ? r[r.length - 1].total : null; }"
    charts = page.locator("#metrics-charts")
    page.wait_for_function(
        "() => document.querySelector('#metrics-charts')._charts.lagReadings.length >= 2", timeout=LIVE
    )
    assert charts.evaluate(last_total) == 40  # nothing committed: the whole topic
    expect(page.locator("#chart-lag .u-legend")).to_contain_text(f"{topic} / 1")

    # Events keep arriving and no batch comes: the next readings reach the open page's chart.
    produce(kafka_bootstrap, topic, [(i % 2, {"n": i}) for i in range(25)])
    assert lag.follow(pipeline)
    page.wait_for_function(
        "() => { const r = document.querySelector('#metrics-charts')._charts.lagReadings; "
        "return r.length && r[r.length - 1].total === 65; }",
        timeout=LIVE,
    )
    plotted = charts.evaluate("el => { const d = el._charts.plots['lag'].data[1]; return d[d.length - 1]; }")
    assert plotted == 65
