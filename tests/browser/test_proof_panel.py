"""The pipeline page's proof panel in Chromium: the hourly balance, the audit's count in words, and the query
copied to the clipboard as it is (under the CSP). Screenshot in test-artifacts/audit/."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import clickhouse_connect
import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from spark_jobs.metrics import BatchMetrics, MetricsPublisher
from tests.webapp.audits.conftest import create_pipeline_table, insert_orders
from tests.webapp.conftest import orders_spec, produce_records
from webapp.audits import services as audit_services
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.services import pipeline_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "audit"


def test_the_proof_panel_adds_up_and_hands_out_its_query(
    page: Page, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings
):
    settings.REDIS_URL = redis_url
    user = get_user_model().objects.create_user("prover", password="prover-pass-123")
    topic = f"orders_{uuid.uuid4().hex[:6]}"
    produce_records(kafka_bootstrap, topic, [], partitions=1)
    ch = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    table = create_pipeline_table(ch, f"cf_proof_{uuid.uuid4().hex[:6]}")
    insert_orders(ch, table, [1, 2, 3])
    pipeline = pipeline_create(
        owner=user,
        name="proved",
        kafka_connection=kafka_connection_create(owner=user, data={"name": "k", "bootstrap_servers": kafka_bootstrap}),
        clickhouse_connection=clickhouse_connection_create(
            owner=user, data={"name": "c", "host": clickhouse_server.host, "port": clickhouse_server.port}
        ),
        spec=orders_spec(topic, table.database, create_table=True),
    )
    audit_services.audit_check(audited_table=audit_services.audited_table_sync_pipeline(pipeline=pipeline))
    at = datetime.now(UTC) - timedelta(minutes=1)
    MetricsPublisher(pipeline.job_name, redis_url).publish(
        BatchMetrics(
            pipeline="proved",
            batch_id=0,
            timestamp=at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            input_rows=120,
            duplicates_dropped=15,
            rows_written=100,
            dead_letters=3,
            filtered_out=2,
            batch_duration_ms=300,
        )
    )

    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("prover")
    page.get_by_label("Password").fill("prover-pass-123")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/pipelines/{pipeline.pk}/")

    panel = page.locator("#proof-card")
    expect(panel.locator("#proof-hours tbody tr")).to_have_count(1)
    expect(panel.locator("#proof-hours tbody tr")).to_contain_text("120")
    expect(panel.locator("#proof-hours tbody tr")).to_contain_text("= adds up")
    expect(panel.locator("#proof-audit")).to_contain_text("0 duplicate keys in the last hour")
    panel.locator("#copy-audit-query").click()
    expect(panel.locator("#copy-audit-query")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert "GROUP BY `order_id`" in copied and "INTERVAL 3600 SECOND" in copied
    assert ch.query(copied).result_rows == [(0, 0)]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "proof-panel.png"))
    ch.close()
