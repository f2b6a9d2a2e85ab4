"""The pipeline page stays live while it is open: the charts draw each new batch, across a change of status; the
actions that depend on the status (Stop, Resume), the version and the mapped columns follow the pipeline; the
first batch shows its progress and the Proof fills once it ends; and nothing on the page logs an error as it polls.
Screenshots go to test-artifacts/pages/<screen>/."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from spark_jobs.metrics import MetricsPublisher
from tests.browser.screens import LAPTOP, Screen, check_page, nav_link, shoot
from tests.browser.world import PASSWORD, STEADY_BATCHES, STEADY_RATE, batch, build_world, log_in
from tests.pipeline_states import walk_to
from tests.webapp.conftest import orders_spec, produce_records
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.models import Pipeline, PipelineRun
from webapp.pipelines.services import pipeline_create, pipeline_resume, pipeline_update

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
POLLED = 30_000  # ms: the charts poll every 5 s, the run state every 5 s; a busy machine is slower
CHARTS = ("events-per-second", "rows", "duplicates", "dead-letters", "lag", "batch-duration")

# The time of the newest point each chart shows (inside its time axis), in unix seconds.
LAST_SHOWN_JS = """
() => {
  const plots = document.querySelector('#metrics-charts')._charts.plots;
  const out = {};
  for (const [id, plot] of Object.entries(plots)) {
    const shown = plot.data[0].filter(t => t >= plot.scales.x.min && t <= plot.scales.x.max);
    out[id] = shown.length ? shown[shown.length - 1] : null;
  }
  return out;
}
"""


def errors_of(page: Page) -> list[str]:
    """What the page logs as an error, and what its scripts throw, from now on."""
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def wait_for_last_point(page: Page, at: datetime) -> None:
    """Every chart shows the batch that started `at` as its newest point."""
    seconds = int(at.timestamp() * 1000) / 1000
    page.wait_for_function(
        f"t => Object.values(({LAST_SHOWN_JS})()).every(last => last === t) && "
        f"Object.keys(({LAST_SHOWN_JS})()).length === {len(CHARTS)}",
        arg=seconds,
        timeout=POLLED,
    )


def test_the_charts_draw_new_batches_across_a_stop(
    page: Page, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings
):
    settings.REDIS_URL = redis_url
    world = build_world(kafka_bootstrap=kafka_bootstrap, clickhouse_server=clickhouse_server, redis_url=redis_url)
    pipeline, name = world.pipeline, world.pipeline.job_name
    page.set_viewport_size({"width": LAPTOP.width, "height": LAPTOP.height})
    page.set_default_timeout(30_000)
    errors = errors_of(page)
    log_in(page, live_server.url, next_path=f"/pipelines/{pipeline.pk}/")
    expect(page.locator("#metrics-charts canvas")).to_have_count(len(CHARTS))
    before = page.evaluate(LAST_SHOWN_JS)
    assert set(before) == set(CHARTS) and None not in before.values(), before

    # A batch while it runs: every chart's newest point is that batch, without a reload.
    first = datetime.now(UTC)
    world.publisher.publish(batch(name, world.topic, STEADY_BATCHES + 1, first, rate=STEADY_RATE * 3))
    wait_for_last_point(page, first)
    legend = page.locator("#chart-events-per-second .u-legend")
    expect(legend).to_contain_text("6,0")  # the new batch's rate, 6,000-something events/s

    # The pipeline is asked to stop; its last batch comes in, then it stops. The charts follow each step.
    walk_to(pipeline, "stop_requested")
    expect(page.locator("#pipeline-status")).to_have_text("Stopping", timeout=POLLED)
    last = datetime.now(UTC)
    world.publisher.publish(batch(name, world.topic, STEADY_BATCHES + 2, last, rate=STEADY_RATE / 2))
    wait_for_last_point(page, last)
    walk_to(pipeline, "stopped", message="stopped by analyst")
    expect(page.locator("#pipeline-status")).to_have_text("Stopped", timeout=POLLED)
    expect(legend).to_contain_text("1,0")  # the last batch's rate, 1,000-something events/s
    with page.expect_response(lambda r: "/metrics/?since=" in r.url, timeout=POLLED):  # one more poll
        pass
    wait_for_last_point(page, last)
    shoot(page, LAPTOP, "30-charts-after-stop")

    # A drag zooms every chart in; a double-click zooms out to the range, which follows new batches again.
    box = page.locator("#chart-rows .u-over").bounding_box()
    assert box
    page.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    page.wait_for_function(
        "() => Object.values(document.querySelector('#metrics-charts')._charts.plots)"
        ".every(p => p.scales.x.max < Date.now() / 1000 - 60)"
    )
    page.locator("#chart-rows .u-over").dblclick()
    wait_for_last_point(page, last)
    assert not errors, errors


def test_the_actions_and_versions_follow_the_pipeline_without_a_reload(
    page: Page, screen: Screen, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings, celery_app
):
    # celery_app: Stop, Resume and the redeploy send their task to the test's Redis (no worker takes it: the test
    # plays the worker, behind the open page).
    settings.REDIS_URL = redis_url
    world = build_world(kafka_bootstrap=kafka_bootstrap, clickhouse_server=clickhouse_server, redis_url=redis_url)
    pipeline = world.pipeline
    Pipeline.objects.filter(pk=pipeline.pk).update(deployed_version=pipeline.current_version)  # v1 runs
    page.set_default_timeout(30_000)
    errors = errors_of(page)
    log_in(page, live_server.url, next_path=f"/pipelines/{pipeline.pk}/")
    destination = page.locator("#pipeline-summary")
    expect(destination).to_contain_text("4 mapped")
    expect(destination).to_contain_text("current v1, deployed v1")
    expect(page.locator("#stop")).to_be_visible()
    expect(page.locator("#resume")).to_have_count(0)

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#stop").click()
    expect(page.locator("#pipeline-status")).to_have_text("Stopping")
    expect(page.locator("#flash-pending")).to_have_text("Stop requested.")
    expect(page.locator("#stop")).to_have_count(0)
    page.evaluate("() => { window.keptOpen = true; }")  # gone if the page loads again

    # The job stops: Resume appears, with the status's reason, and the pending flash leaves.
    walk_to(pipeline, "stopped", message="Stopped after its last micro-batch.")
    resume = page.locator("#resume")
    expect(resume).to_have_text("Resume v1", timeout=POLLED)
    expect(page.locator("#pipeline-status")).to_have_text("Stopped")
    expect(page.locator("#pipeline-head")).to_contain_text("Stopped after its last micro-batch.")
    expect(page.locator("#reset-checkpoint")).to_be_visible()
    expect(page.locator("#flash-pending")).to_have_count(0)
    shoot(page, screen, "31-stopped-resume-without-reload")

    # Someone resumes it elsewhere (another tab, the API): Stop comes back, Resume goes.
    pipeline_resume(pipeline=pipeline, user=world.user)
    expect(page.locator("#stop")).to_be_visible(timeout=POLLED)
    expect(resume).to_have_count(0)
    expect(page.locator("#pipeline-status")).to_have_text("Deploying")
    walk_to(pipeline, "running", message="the job's streaming query started")
    expect(page.locator("#pipeline-status")).to_have_text("Running", timeout=POLLED)

    # A column is added (a new version, redeployed): the version and the mapped count follow.
    spec = orders_spec(world.topic, world.database, create_table=True)
    spec["source"]["fields"].append({"path": "coupon", "type": "string"})
    spec["sink"]["columns"].append({"field": "coupon", "column": "coupon", "type": "Nullable(String)"})
    pipeline_update(pipeline=Pipeline.objects.get(pk=pipeline.pk), user=world.user, spec=spec, note="coupon added")
    expect(destination).to_contain_text("5 mapped", timeout=POLLED)
    expect(destination).to_contain_text("current v2, deployed v2")
    expect(page.locator("#pipeline-versions tbody tr")).to_have_count(2)
    expect(page.locator("#spec-json")).to_contain_text('"coupon"')
    expect(page.locator("#pipeline-status")).to_have_text("Deploying")
    assert page.evaluate("() => window.keptOpen === true"), "the page was not loaded again"
    # Every table fits its card, on a phone as labelled cards (status history, runs, versions, Proof).
    expect(page.locator("#proof-hours")).to_be_visible()
    check_page(page, screen, "32-new-version-without-reload", tables=True)
    if screen.narrow:
        cell = page.locator("#runs tbody tr").first.locator("td").first
        assert cell.evaluate("td => getComputedStyle(td, '::before').content") == '"Started (UTC)"'
    nav_link(page, screen, "Pipelines").click()
    expect(page.locator("#pipelines tbody tr")).to_have_count(1)
    check_page(page, screen, "34-pipelines-list", tables=True)

    assert not errors, errors


def test_the_first_batch_shows_progress_and_the_proof_fills_once_it_ends(
    page: Page, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings
):
    settings.REDIS_URL = redis_url
    user = get_user_model().objects.create_user("starter", password=PASSWORD)
    topic = f"orders_{uuid.uuid4().hex[:6]}"
    produce_records(kafka_bootstrap, topic, [], partitions=2)
    pipeline = pipeline_create(
        owner=user,
        name="orders",
        kafka_connection=kafka_connection_create(owner=user, data={"name": "k", "bootstrap_servers": kafka_bootstrap}),
        clickhouse_connection=clickhouse_connection_create(
            owner=user, data={"name": "c", "host": clickhouse_server.host, "port": clickhouse_server.port}
        ),
        spec=orders_spec(topic, "default"),
    )
    walk_to(pipeline, "running", message="the job's streaming query started")
    started = datetime.now(UTC) - timedelta(seconds=20)
    PipelineRun.objects.create(
        pipeline=pipeline, version=pipeline.current_version, host="worker-1", pid=4242, started_at=started,
        running_at=started,
    )  # fmt: skip
    page.set_viewport_size({"width": LAPTOP.width, "height": LAPTOP.height})
    page.set_default_timeout(30_000)
    errors = errors_of(page)
    log_in(page, live_server.url, "starter", next_path=f"/pipelines/{pipeline.pk}/")

    # While the backlog's first batch runs: how long it has run, not "No metrics yet"; it counts on.
    progress = page.locator("#metrics-first-batch")
    expect(progress).to_contain_text(re.compile(r"First micro-batch running for 2\d s"))
    expect(progress).to_contain_text(f"(the job's query started at {started:%H:%M:%S} UTC)")
    expect(page.locator("#metrics-empty")).to_have_count(0)
    expect(progress).to_contain_text(re.compile(r"running for ([3-9]\d|1\d\d) s"), timeout=POLLED)
    expect(page.locator("#proof-empty")).to_be_visible()
    shoot(page, LAPTOP, "33-first-batch-running")

    # The first batch ends: its counts show, and the Proof looks again at once (not at its next minute).
    publisher = MetricsPublisher(pipeline.job_name, redis_url)
    publisher.publish(batch(pipeline.job_name, topic, 0, datetime.now(UTC), rate=STEADY_RATE))
    expect(page.locator("#metrics-totals")).to_be_visible(timeout=POLLED)
    expect(page.locator("#proof-empty")).to_have_count(0, timeout=10_000)
    expect(page.locator("#proof-hours")).to_contain_text("4,000")
    assert not errors, errors
