"""The alert pages in Chromium under the Content-Security-Policy: the pipeline page's alerts card, a rule edited,
a webhook channel added (its URL never shown back) and deleted after the confirmation, the history."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.pipeline_states import walk_to
from tests.webapp.alerts.conftest import make_pipeline
from webapp.alerts import services
from webapp.alerts.models import AlertChannel, AlertRule
from webapp.pipelines.models import PipelineStatus

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "alerts"


def test_rules_channels_and_history_in_the_browser(page: Page, live_server, redis_url, settings):
    settings.REDIS_URL = redis_url
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    user = get_user_model().objects.create_user("alice", password="alice-pass-123")
    pipeline = make_pipeline(user, name="payments")
    walk_to(pipeline, PipelineStatus.FAILED, message="The job exited.")
    services.alerts_evaluate()

    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("alice-pass-123")
    page.get_by_role("button", name="Log in").click()

    page.goto(f"{live_server.url}/pipelines/{pipeline.pk}/")
    expect(page.locator("#alerts-firing")).to_contain_text("Pipeline failed")
    page.screenshot(path=str(ARTIFACTS / "pipeline-page.png"), full_page=True)
    page.locator("#alert-rules-link").click()

    expect(page.locator("#rule-consumer_lag")).to_contain_text("Records behind more than")
    row = page.locator("#rule-form-consumer_lag")
    row.get_by_label("Records behind more than").fill("5000")
    row.get_by_role("button", name="Save").click()
    expect(page.locator(".flash")).to_contain_text("saved")
    assert AlertRule.objects.get(pipeline=pipeline, kind="consumer_lag").threshold == 5000
    expect(page.locator("#incident-list")).to_contain_text("The job exited.")
    page.screenshot(path=str(ARTIFACTS / "rules.png"), full_page=True)

    page.get_by_role("link", name="Alerts", exact=True).click()
    page.get_by_role("link", name="Channels").click()
    form = page.locator("#channel-form")
    form.get_by_label("Name").fill("team hook")
    form.get_by_label("Kind").select_option("webhook")
    form.get_by_label("Webhook URL").fill("https://hooks.example.com/services/zq-browser-secret")
    form.get_by_role("button", name="Add channel").click()
    expect(page.locator("#channel-list")).to_contain_text("https://hooks.example.com/••••••")
    assert "zq-browser-secret" not in page.content()
    page.screenshot(path=str(ARTIFACTS / "channels.png"), full_page=True)
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#channel-list").get_by_role("button", name="Delete").click()
    expect(page.locator("#no-channels")).to_be_visible()
    assert not AlertChannel.objects.exists()

    page.goto(f"{live_server.url}/alerts/")
    expect(page.locator("#incident-list")).to_contain_text("payments")
    page.screenshot(path=str(ARTIFACTS / "history.png"), full_page=True)
