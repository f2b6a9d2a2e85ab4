"""A link to something that is not there, or not the reader's, opens ClearFlow's page: the header, the reason in
words and the way back, on a laptop and a phone. Screenshots go to test-artifacts/pages/<screen>/."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.browser.screens import Screen, check_page, nav_link
from tests.browser.world import PASSWORD, build_world, log_in
from webapp.wizard.services import draft_discard, draft_get_or_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_someone_elses_pipeline_and_a_used_draft_say_why_and_lead_back(
    page: Page, screen: Screen, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings
):
    settings.REDIS_URL = redis_url
    world = build_world(kafka_bootstrap=kafka_bootstrap, clickhouse_server=clickhouse_server, redis_url=redis_url)
    visitor = get_user_model().objects.create_user("visitor", password=PASSWORD)
    page.set_default_timeout(30_000)
    log_in(page, live_server.url, "visitor")

    # The analyst's pipeline, opened by another user: not found, in words, with the header and the way back.
    response = page.goto(f"{live_server.url}/pipelines/{world.pipeline.pk}/")
    assert response and response.status == 404
    expect(page.locator("h1")).to_have_text("Not found")
    expect(page.locator("#error-reason")).to_have_text(
        f"You have no pipeline {world.pipeline.pk}: it was deleted, or it belongs to another user."
    )
    expect(page.locator("#error-page")).not_to_contain_text("orders-to-clickhouse")
    check_page(page, screen, "40-not-found-pipeline")
    nav_link(page, screen, "Connections").click()  # the header works as on any page
    expect(page.locator("h1")).to_have_text("Connections")

    # A draft's URL once the draft was used: the page says the draft is gone, and leads back to the pipelines.
    draft = draft_get_or_create(user=visitor)
    step = f"{live_server.url}/wizard/{draft.pk}/kafka/"
    page.goto(step)
    draft_discard(draft=draft)
    page.goto(step)
    expect(page.locator("#error-reason")).to_have_text(
        "This draft is gone: a draft ends once its pipeline is saved, or when it is discarded."
    )
    check_page(page, screen, "41-not-found-draft")
    page.get_by_role("link", name="Your pipelines").click()
    expect(page.locator("h1")).to_have_text("Pipelines")
