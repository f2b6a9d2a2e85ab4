"""Small things a new analyst trips on, at a laptop's width and a phone's: the empty list counts the wizard's
steps right, the API docs send to the API tokens page that exists, Revoke asks first, and the admin's login page
for a user who is not staff keeps ClearFlow's header whole. Screenshots go to test-artifacts/pages/<screen>/."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.browser.screens import Screen, check_page, nav_link, open_menu
from tests.browser.world import PASSWORD, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_small_points_a_new_analyst_trips_on(page: Page, screen: Screen, live_server):
    get_user_model().objects.create_user("newcomer", password=PASSWORD)
    page.set_default_timeout(30_000)
    log_in(page, live_server.url, "newcomer")

    # The wizard has nine steps (the join is optional), and the empty list says so.
    expect(page.locator(".card.empty")).to_contain_text("Set one up in nine short steps, one of them optional.")
    check_page(page, screen, "50-no-pipelines")

    # The API docs send to the API tokens page, which the header links to.
    nav_link(page, screen, "API docs").click()
    description = page.locator("#swagger-ui .info .description")
    expect(description).to_contain_text("on its API tokens page (the link beside your workspace at the top right")
    expect(description).not_to_contain_text("Account")
    open_menu(page, screen)
    page.locator("#topbar").get_by_role("link", name="API tokens").click()
    expect(page.locator("h1")).to_have_text("API tokens")

    # Revoke asks first: dismissed, the token stays; accepted, it goes.
    page.get_by_label("Name").fill("ci")
    page.get_by_role("button", name="Create token").click()
    expect(page.locator("#token-list tbody tr")).to_have_count(1)
    questions: list[str] = []

    def answer(accept: bool):
        def handle(dialog) -> None:
            questions.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        return handle

    page.once("dialog", answer(False))
    page.get_by_role("button", name="Revoke…").click()
    expect(page.locator("#token-list tbody tr")).to_have_count(1)
    assert questions == [
        "Revoke the token ci? Every program that uses it is refused from now on; this cannot be undone."
    ]
    page.once("dialog", answer(True))
    page.get_by_role("button", name="Revoke…").click()
    expect(page.locator("#no-tokens")).to_be_visible()

    # The admin's login page, for a user who is not staff: the header spans the window, one line on a laptop.
    page.goto(f"{live_server.url}/admin/")
    expect(page.locator("#content")).to_contain_text("You are authenticated as newcomer")
    bar = page.locator("#topbar").bounding_box()
    assert bar and bar["x"] == 0 and bar["width"] == screen.width, bar
    if not screen.narrow:
        assert bar["height"] < 70, "the laptop's header is one line"
        expect(page.locator("#topbar-menu")).to_be_visible()
    box = page.locator("#container").bounding_box()
    assert box and box["y"] >= bar["y"] + bar["height"], "the login box sits below the header"
    check_page(page, screen, "51-admin-login-not-staff")
