"""Deploy from the wizard's review step in Chromium, with a real Celery worker, Spark, Kafka and ClickHouse: the
pipeline page turns to "Running" by itself, its totals and charts move as events arrive, and the rows are there."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

# Chromium's launch settings and the CSP watch of the browser tests.
from tests.browser.conftest import browser_context_args, browser_type_launch_args, no_csp_violations  # noqa: F401
from tests.worker.helpers import JOB_TIMEOUT, api_spec, create_pipeline, events, produce, table_counts, wait_for

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "worker"

pytestmark = [pytest.mark.spark, pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def rows_written(page: Page) -> int:
    """The "rows written" total the page shows now (0 before the first metrics arrive)."""
    if page.locator("#metrics-totals").count() == 0:
        return 0
    text = page.locator("#metrics-totals .stat", has_text="rows written").locator("b").inner_text()
    return int(text.replace(",", "").replace("\u202f", "").strip() or 0)


def test_deploy_from_the_review_step_runs_and_the_page_follows(
    page: Page, live_server, api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker
):
    table = f"browser_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, events("first", 500, 50))
    celery_worker.start()
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table))

    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("owner")
    page.get_by_label("Password").fill("owner-pass-123")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("h1")).to_have_text("Pipelines")

    # Edit opens the wizard on the pipeline's draft; its review step has the Deploy button.
    page.goto(f"{live_server.url}/pipelines/{pk}/edit/")
    expect(page).to_have_url(re.compile(r"/wizard/\d+/[\w-]+/$"))
    page.goto(re.sub(r"/[\w-]+/$", "/review/", page.url))
    expect(page.locator("h1")).to_have_text("Review and deploy")
    page.locator("#deploy").click()

    expect(page).to_have_url(re.compile(rf"/pipelines/{pk}/$"))
    expect(page.locator("#pipeline-status")).to_have_text("Deploying")
    # No reload: the page's polled run state turns the badge to Running once the job has started.
    expect(page.locator("#pipeline-status")).to_have_text("Running", timeout=JOB_TIMEOUT * 1000)
    wait_for(lambda: table_counts(ch, table) == (500, 500), timeout=JOB_TIMEOUT)
    wait_for(lambda: rows_written(page) == 500, timeout=60)

    # More events: the totals move on the open page, and ClickHouse has each unique event once.
    produce(kafka_bootstrap, topic, events("second", 300, 30))
    wait_for(lambda: table_counts(ch, table) == (800, 800), timeout=JOB_TIMEOUT)
    wait_for(lambda: rows_written(page) == 800, timeout=60)
    # Two micro-batches with data at least (the engine runs none without data): uPlot drew the charts.
    expect(page.locator("#metrics-charts canvas")).to_have_count(6, timeout=60_000)
    expect(page.locator("#status-history")).to_contain_text("Running")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "pipeline-running.png"), full_page=True)
