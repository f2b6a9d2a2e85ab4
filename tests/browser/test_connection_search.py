"""An analyst with many connections finds one by typing part of its name or address: the lists narrow as one
types, on a laptop and a phone, and say so when nothing matches; a test from the page says when and how it went,
and one connection becomes the default the wizard preselects. Screenshots go to test-artifacts/pages/<screen>/."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from localstack.processes import free_port
from tests.browser.screens import Screen, check_page
from tests.browser.world import PASSWORD, log_in
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_connections_narrow_as_one_types(page: Page, screen: Screen, live_server):
    analyst = get_user_model().objects.create_user("finder", password=PASSWORD)
    for number in range(12):
        region = "eu" if number % 2 else "us"
        kafka_connection_create(
            owner=analyst, data={"name": f"kafka {number:02d}", "bootstrap_servers": f"broker-{region}.internal:9092"}
        )
    kafka_connection_create(owner=analyst, data={"name": "orders prod", "bootstrap_servers": "orders.internal:9092"})
    clickhouse_connection_create(owner=analyst, data={"name": "warehouse", "host": "ch-eu.internal", "port": 8123})
    page.set_default_timeout(30_000)
    log_in(page, live_server.url, "finder", next_path="/connections/")
    rows = page.locator("#kafka-connections tbody tr td strong")
    expect(rows).to_have_count(13)

    page.get_by_label("Find a connection").press_sequentially("ORDERS", delay=30)
    expect(rows).to_have_text(["orders prod"])
    expect(page.locator("#search-note")).to_contain_text("name or address contains “ORDERS”")
    expect(page.locator("#clickhouse-connections")).to_have_count(0)
    check_page(page, screen, "60-connection-search")

    page.get_by_label("Find a connection").fill("eu.internal")  # by the address
    expect(rows).to_have_count(6)
    expect(page.locator("#clickhouse-connections tbody tr td strong")).to_have_text(["warehouse"])
    assert "search=eu.internal" in page.url  # the address bar keeps it: a reload or a shared link shows the same

    page.get_by_label("Find a connection").fill("nothing like it")
    expect(page.get_by_text("No Kafka connection matches “nothing like it”.")).to_be_visible()


def test_a_test_from_the_page_says_when_and_how_it_went_and_one_becomes_the_default(
    page: Page, screen: Screen, live_server
):
    analyst = get_user_model().objects.create_user("tester", password=PASSWORD)
    gone = kafka_connection_create(
        owner=analyst, data={"name": "old cluster", "bootstrap_servers": f"127.0.0.1:{free_port()}"}
    )
    kafka_connection_create(owner=analyst, data={"name": "new cluster", "bootstrap_servers": "127.0.0.1:1"})
    page.set_default_timeout(30_000)
    log_in(page, live_server.url, "tester", next_path="/connections/")
    last_test = page.locator(f"#last-test-kafka-{gone.pk}")
    expect(last_test).to_have_text("never")

    row = page.locator("#kafka-connections tbody tr", has=page.locator("strong", has_text="old cluster"))
    row.get_by_role("button", name="Test").click()
    expect(page.locator(f"#test-kafka-{gone.pk}")).to_contain_text("Connection failed.")
    expect(last_test).to_contain_text("failed")  # no reload: the test's answer replaced the cell
    expect(last_test).to_contain_text("connection refused")

    row.get_by_role("button", name="Make default").click()
    expect(page.get_by_text("old cluster is now the default")).to_be_visible()
    row = page.locator("#kafka-connections tbody tr", has=page.locator("strong", has_text="old cluster"))
    expect(row.locator(".badge", has_text="default")).to_be_visible()
    expect(row.get_by_role("button", name="Make default")).to_have_count(0)
    check_page(page, screen, "61-connection-default-and-last-test")
