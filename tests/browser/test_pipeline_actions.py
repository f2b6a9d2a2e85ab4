"""The pipeline page's destructive buttons ask first: Stop, like Delete, is confirmed in a dialog."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.webapp.conftest import orders_spec
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.models import Pipeline
from webapp.pipelines.services import pipeline_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_stop_asks_before_it_stops_the_pipeline(
    page: Page, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings
):
    settings.REDIS_URL = redis_url
    user = get_user_model().objects.create_user("operator", password="operator-pass-123")
    pipeline = pipeline_create(
        owner=user,
        name="orders",
        kafka_connection=kafka_connection_create(owner=user, data={"name": "k", "bootstrap_servers": kafka_bootstrap}),
        clickhouse_connection=clickhouse_connection_create(
            owner=user, data={"name": "c", "host": clickhouse_server.host, "port": clickhouse_server.port}
        ),
        spec=orders_spec("orders", "default"),
    )
    # A deploy waiting for the worker (no worker here): Stop withdraws it.
    Pipeline.objects.filter(pk=pipeline.pk).update(status="deploy_requested")

    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/login/?next=/pipelines/{pipeline.pk}/")
    page.get_by_label("Username").fill("operator")
    page.get_by_label("Password").fill("operator-pass-123")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#pipeline-status")).to_have_text("Deploying")

    questions: list[str] = []

    def answer(accept: bool):
        def handle(dialog) -> None:
            questions.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        return handle

    page.once("dialog", answer(False))
    page.locator("#stop").click()
    expect(page.locator("#pipeline-status")).to_have_text("Deploying")
    assert questions == [
        "Stop the pipeline orders? It finishes its current micro-batch; Resume continues where it stopped."
    ]
    pipeline.refresh_from_db()
    assert pipeline.status == "deploy_requested", "dismissing the question changes nothing"

    page.once("dialog", answer(True))
    page.locator("#stop").click()
    # No job had taken the deploy: it is withdrawn at once, and the message says so (it stays: nothing is under way).
    expect(page.locator("#pipeline-status")).to_have_text("Stopped")
    expect(page.locator(".flash")).to_have_text("Deploy withdrawn by operator.")
    expect(page.locator("#flash-pending")).to_have_count(0)
    with page.expect_response(lambda r: "/run-state/" in r.url, timeout=20_000):  # its next look (5 s)
        pass
    expect(page.locator(".htmx-request")).to_have_count(0)
    expect(page.locator(".flash")).to_have_text("Deploy withdrawn by operator.")
    pipeline.refresh_from_db()
    assert pipeline.status == "stopped"
