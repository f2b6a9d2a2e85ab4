"""Every page at a laptop's width and a phone's: the header folds into a menu on a phone, nothing makes the page
scroll sideways, no text is cut off, and ClearFlow's header with its way back is on the API docs and the admin.
A screenshot of each page at each width goes to test-artifacts/pages/<screen>/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.screens import Screen, check_page, nav_link, open_menu
from tests.browser.world import DEAD_LETTERS, build_world, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_every_page_reads_on_a_laptop_and_a_phone(
    page: Page, screen: Screen, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings
):
    settings.REDIS_URL = redis_url
    world = build_world(kafka_bootstrap=kafka_bootstrap, clickhouse_server=clickhouse_server, redis_url=redis_url)
    pk = world.pipeline.pk
    page.set_default_timeout(30_000)

    page.goto(f"{live_server.url}/login/")
    check_page(page, screen, "00-login")
    log_in(page, live_server.url)

    # The header: every link on a laptop; on a phone the brand and a Menu button, the links behind it.
    menu = page.locator("#topbar-menu")
    if screen.narrow:
        expect(page.locator("#menu-toggle")).to_be_visible()
        expect(menu).to_be_hidden()
        page.locator("#menu-toggle").click()
        expect(menu).to_be_visible()
        expect(page.locator("#menu-toggle")).to_have_attribute("aria-expanded", "true")
        check_page(page, screen, "01-menu-open")
        page.keyboard.press("Escape")
        expect(menu).to_be_hidden()
    else:
        expect(page.locator("#menu-toggle")).to_be_hidden()
        expect(menu).to_be_visible()
        box = page.locator("#topbar").bounding_box()
        assert box and box["height"] < 70, "the laptop's header is one line"

    expect(page.locator("h1")).to_have_text("Pipelines")
    expect(page.locator("#pipelines tbody tr")).to_have_count(1)
    check_page(page, screen, "02-pipelines")

    nav_link(page, screen, "Pipelines").click()
    page.get_by_role("link", name="orders-to-clickhouse").click()
    expect(page.locator("#metrics-charts canvas")).to_have_count(6)
    expect(page.locator("#dead-letter-rows tbody tr")).to_have_count(len(DEAD_LETTERS))
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    expect(page.locator("#alerts-quiet")).to_be_visible()
    check_page(page, screen, "03-pipeline")
    # Cards stack on a phone: Source above Destination; side by side on a laptop.
    source = page.locator(".card", has=page.get_by_role("heading", name="Source", exact=True)).bounding_box()
    destination = page.locator(".card", has=page.get_by_role("heading", name="Destination", exact=True)).bounding_box()
    assert source and destination
    if screen.narrow:
        assert destination["y"] >= source["y"] + source["height"]
    else:
        assert destination["y"] == source["y"] and destination["x"] > source["x"]
    # The runs table is wider than a phone: it scrolls inside its card, which stays in the page.
    card = page.locator(".card", has=page.locator("#runs")).bounding_box()
    assert card and card["x"] >= 0 and card["x"] + card["width"] <= screen.width

    page.goto(f"{live_server.url}/pipelines/{pk}/alerts/")
    expect(page.locator("#rule-list tbody tr")).to_have_count(6)
    check_page(page, screen, "04-alert-rules")

    nav_link(page, screen, "Alerts").click()
    expect(page.locator("h1")).to_have_text("Alerts")
    check_page(page, screen, "05-alerts")
    page.get_by_role("link", name="Channels").click()
    expect(page.locator("h1")).to_have_text("Alert channels")
    check_page(page, screen, "06-channels")

    nav_link(page, screen, "Connections").click()
    expect(page.locator("#kafka-connections")).to_contain_text("Local broker")
    check_page(page, screen, "07-connections")

    nav_link(page, screen, "Audits").click()
    expect(page.locator("h1")).to_have_text("Duplicate audits")
    check_page(page, screen, "08-audits")

    nav_link(page, screen, "Health").click()
    expect(page.locator("h1")).to_have_text("Health")
    check_page(page, screen, "09-health")

    open_menu(page, screen)
    page.get_by_role("link", name="API tokens").click()
    expect(page.locator("h1")).to_have_text("API tokens")
    check_page(page, screen, "10-tokens")

    # The API docs and the admin: ClearFlow's header, and the way back to the pipelines.
    nav_link(page, screen, "API docs").click()
    expect(page.locator("#swagger-ui .info .title")).to_contain_text("ClearFlow API")
    expect(page.locator("#topbar .brand")).to_be_visible()
    check_page(page, screen, "11-api-docs")
    nav_link(page, screen, "Pipelines").click()
    expect(page.locator("h1")).to_have_text("Pipelines")

    nav_link(page, screen, "Admin").click()
    expect(page.locator("#site-name")).to_have_text("ClearFlow administration")
    check_page(page, screen, "12-admin")
    page.goto(f"{live_server.url}/admin/pipelines/pipeline/")
    expect(page.locator("#result_list")).to_contain_text("orders-to-clickhouse")
    check_page(page, screen, "13-admin-pipelines")
    nav_link(page, screen, "Pipelines").click()
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("h1")).to_have_text("Pipelines")
