"""The pipeline page at a laptop's width and a phone's: its actions, the copy that follows the pipeline's state,
alerts that reach nobody, the charts (time range, y-scale, legends), the job log and the number format.
Screenshots go to test-artifacts/pages/<screen>/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.screens import Screen, check_page, nav_link, shoot
from tests.browser.world import BACKLOG_RATE, STEADY_RATE, build_world, log_in
from tests.pipeline_states import walk_to
from webapp.pipelines.models import Pipeline

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
POLLED = 30_000  # ms: the page polls its run state every 5 s, its alerts every 30 s; a busy machine is slower


def y_max(page: Page, chart: str) -> float:
    return page.evaluate("id => document.querySelector('#metrics-charts')._charts.plots[id].scales.y.max", chart)


def test_the_pipeline_page_says_what_is_true_now(
    page: Page, screen: Screen, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings
):
    settings.REDIS_URL = redis_url
    build_world(kafka_bootstrap=kafka_bootstrap, clickhouse_server=clickhouse_server, redis_url=redis_url)
    page.set_default_timeout(30_000)
    log_in(page, live_server.url)

    # One number format: the list's throughput, the totals, the proof's sums and the charts' legends.
    expect(page.locator("#pipelines .throughput")).to_have_text("2,000 events/s", timeout=POLLED)
    page.get_by_role("link", name="orders-to-clickhouse").click()
    totals = page.locator("#metrics-totals")
    expect(totals.locator(".stat").first).to_have_text("350,000events in")
    proof = page.locator("#proof-hours td.num")
    expect(proof.first).to_be_visible(timeout=POLLED)
    sums = proof.all_inner_texts()
    assert all(re.fullmatch(r"-?\d{1,3}(,\d{3})*", text) for text in sums), sums
    read = page.locator("#proof-hours tr td:nth-child(2)").all_inner_texts()
    assert sum(int(text.replace(",", "")) for text in read) == 350_000

    # The actions: one row of whole buttons on a laptop, no stray checkbox; Delete asks in a dialog, with the
    # checkpoint's removal as a choice there.
    actions = page.locator("#pipeline-actions")
    expect(actions.locator("input[type=checkbox]")).to_have_count(0)
    stop, edit = page.locator("#stop").bounding_box(), page.locator("#edit").bounding_box()
    assert stop and edit and stop["height"] == edit["height"], "Stop's label does not wrap"
    if not screen.narrow:
        boxes = actions.locator(".btn").evaluate_all("buttons => buttons.map(b => b.getBoundingClientRect().y)")
        tops = {round(y) for y in boxes}
        assert len(tops) == 1, f"the actions are on one row on a laptop: {tops}"
    page.locator("#delete").click()
    dialog = page.locator("#delete-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_label("Also remove its checkpoint (Kafka offsets and dedup state)")).not_to_be_checked()
    check_page(page, screen, "20-delete-dialog", full_page=False)
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()

    # The page's sections, one click away: the log is reached without scrolling through the charts.
    sections = page.locator("#page-sections a")
    expect(sections).to_have_count(9)
    page.locator("#page-sections").get_by_role("link", name="Runs and log").click()
    expect(page.locator("#run-state")).to_be_in_viewport()
    page.evaluate("window.scrollTo(0, 0)")

    # The audit is due while the pipeline runs (not "starts once the pipeline runs").
    expect(page.locator("#audit-pending")).to_contain_text("The pipeline runs: the first audit of")
    expect(page.locator("#audit-pending")).to_contain_text("runs within 5 minutes")

    # The job log: ClearFlow's lines; Spark's start-up noise and stack traces only when asked for.
    log = page.locator("#job-log")
    expect(log).to_contain_text("clearflow.run pipeline pipeline-146 failed: ClickHouseWriteError")
    expect(log.get_by_text("WARN NativeCodeLoader")).to_be_hidden()
    expect(log.get_by_text("Setting default log level", exact=False)).to_be_hidden()
    spark_lines = int(page.locator("#spark-line-count").inner_text().replace(",", ""))
    assert spark_lines > 200
    page.get_by_label("Show Spark's lines").check()
    expect(log.get_by_text("WARN NativeCodeLoader")).to_be_visible()
    page.get_by_label("Show Spark's lines").uncheck()
    expect(log.get_by_text("WARN NativeCodeLoader")).to_be_hidden()
    # Each batch's record reads as a sentence; the raw JSON line behind it only when asked for.
    worded = log.locator(".log-words").first
    expect(worded).to_have_text("15:00:40 batch 0: 2,200 events in 59.8 s, 200 duplicates dropped, 2,000 rows written")
    raw = log.locator(".log-raw").first
    expect(raw).to_be_hidden()
    page.get_by_label("Show the raw batch lines").check()
    expect(raw).to_contain_text('INFO clearflow.metrics {"batch_duration_ms": 59836, "batch_id": 0')
    expect(worded).to_be_hidden()
    page.get_by_label("Show the raw batch lines").uncheck()
    expect(worded).to_be_visible()

    # Charts: the legends read the last batch's values (not "--"), in the one number format.
    expect(page.locator("#metrics-charts canvas")).to_have_count(6)
    legend = page.locator("#chart-rows .u-legend")
    expect(legend).to_contain_text("Events in")
    expect(legend).to_contain_text("4,000")
    expect(legend).not_to_contain_text("--")
    expect(page.locator("#chart-events-per-second .u-legend")).to_contain_text("2,000")
    # The last hour holds the start-up backlog: its scale reaches it. Over the last 15 minutes the scale follows
    # the steady rate; over 24 hours the backlog is back.
    assert y_max(page, "events-per-second") >= BACKLOG_RATE
    page.locator("#chart-range").get_by_role("button", name="15 min").click()
    expect(page.locator("#chart-range").get_by_role("button", name="15 min")).to_have_attribute("aria-pressed", "true")
    page.wait_for_function(
        "top => document.querySelector('#metrics-charts')._charts.plots['events-per-second'].scales.y.max < top",
        arg=BACKLOG_RATE / 10,
    )
    assert STEADY_RATE <= y_max(page, "events-per-second") < BACKLOG_RATE / 10
    check_page(page, screen, "21-pipeline-charts-15min")
    page.locator("#chart-range").get_by_role("button", name="24 h").click()
    page.wait_for_function(
        "top => document.querySelector('#metrics-charts')._charts.plots['events-per-second'].scales.y.max >= top",
        arg=BACKLOG_RATE,
    )

    # Alerts that reach nobody say so, with the way to a channel; once there is one, they say where they go.
    nobody = page.locator("#alerts-reach-nobody")
    expect(nobody).to_contain_text("These alerts reach nobody")
    nobody.get_by_role("link", name="Add a channel").click()
    expect(page.locator("h1")).to_have_text("Alert channels")
    page.get_by_label("Name").fill("On-call email")
    page.get_by_label("Kind").select_option("email")
    page.get_by_label("Email addresses").fill("oncall@example.com")
    page.locator("#add-channel-submit").click()
    expect(page.locator("h1")).to_contain_text("orders-to-clickhouse")  # back on the pipeline's page
    expect(page.locator("#alerts-channels")).to_have_text("Sent to On-call email.", timeout=POLLED)
    expect(page.locator("#alerts-reach-nobody")).to_have_count(0)
    check_page(page, screen, "22-pipeline-with-channel")


def test_the_deploy_message_leaves_once_the_job_runs(
    page: Page, screen: Screen, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings, celery_app
):
    # celery_app: Deploy sends its task to the test's Redis (no worker takes it: the test plays the worker).
    settings.REDIS_URL = redis_url
    world = build_world(kafka_bootstrap=kafka_bootstrap, clickhouse_server=clickhouse_server, redis_url=redis_url)
    pipeline = walk_to(world.pipeline, "stopped")
    page.set_default_timeout(30_000)
    log_in(page, live_server.url, next_path=f"/pipelines/{pipeline.pk}/")

    expect(page.locator("#audit-pending")).to_contain_text("starts once the pipeline runs")
    page.locator("#deploy").click()
    expect(page.locator("#flash-pending")).to_have_text("Deploy requested.")
    expect(page.locator("#pipeline-status")).to_have_text("Deploying")
    shoot(page, screen, "23-deploy-requested")
    assert Pipeline.objects.get(pk=pipeline.pk).status == "deploy_requested"

    walk_to(pipeline, "running", message="the job's streaming query started")
    expect(page.locator("#pipeline-status")).to_have_text("Running", timeout=POLLED)
    expect(page.locator("#flash-pending")).to_have_count(0)
    expect(page.locator(".flash")).to_have_count(0)
    nav_link(page, screen, "Pipelines").click()
    expect(page.locator("#pipelines")).to_contain_text("Running")
