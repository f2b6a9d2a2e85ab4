"""Dead letters on the pipeline page, at a laptop's width and a phone's: a payload in full on click (indented
when it is JSON), copied to the clipboard as it was sent, and a replay that says first how many will fail
again and why. Screenshots go to test-artifacts/pages/<screen>/."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.browser.screens import Screen, check_page
from tests.browser.world import DEAD_LETTERS, OTHER_REASON, PASSING, SAME_REASON, build_world, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_dead_letter_shows_its_payload_and_a_replay_says_what_will_fail_again(
    page: Page, screen: Screen, live_server, kafka_bootstrap, clickhouse_server, redis_url, settings
):
    settings.REDIS_URL = redis_url
    world = build_world(kafka_bootstrap=kafka_bootstrap, clickhouse_server=clickhouse_server, redis_url=redis_url)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.set_default_timeout(30_000)
    log_in(page, live_server.url, next_path=f"/pipelines/{world.pipeline.pk}/")

    rows = page.locator("#dead-letter-rows tbody tr")
    expect(rows).to_have_count(len(DEAD_LETTERS))
    oops = DEAD_LETTERS[0]
    row = rows.filter(has_text="cannot convert 'oops-1' to uuid")
    preview = row.locator(".payload-preview")
    expect(preview).to_contain_text('{"order_id": "oops-1"')
    # The payload is in view without scrolling sideways: on a phone each dead letter is a card, payload included.
    wrap = page.locator(".table-wrap", has=page.locator("#dead-letter-rows"))
    assert wrap.evaluate("el => el.scrollWidth <= el.clientWidth"), "the dead letters scroll sideways"
    check_page(page, screen, "29-dead-letters")
    preview.click()

    # The whole payload, indented, with where it came from and why it failed.
    dialog = page.locator("#dead-letter-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#dead-letter-reason")).to_have_text(oops.reason)
    expect(dialog).to_contain_text("JSON, indented")
    payload = dialog.locator("#dead-letter-payload")
    assert payload.inner_text() == json.dumps(json.loads(oops.raw), indent=2)
    expect(payload).to_contain_text('"city": "Lisbon"')  # the end of it, cut in the table
    check_page(page, screen, "30-dead-letter-payload", full_page=False)
    # Copy: the payload as the producer sent it.
    dialog.get_by_role("button", name="Copy payload").click()
    expect(dialog.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == oops.raw
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()

    # A payload that is not JSON is shown as it is, and says so.
    rows.filter(has_text="invalid JSON").locator(".payload-preview").click()
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("not valid JSON")
    expect(dialog.locator("#dead-letter-payload")).to_have_text("not json at all {")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # Replay asks first, with the forecast by the spec that will read them again.
    page.locator("#dead-letters-replay").click()
    replay = page.locator("#replay-dialog")
    expect(replay).to_be_visible()
    expect(replay.locator("#replay-count")).to_have_text(str(len(DEAD_LETTERS)))
    expect(replay.locator("#replay-same-count")).to_have_text(str(SAME_REASON))
    fail_again = replay.locator("#replay-fail-again")
    expect(fail_again).to_contain_text("will fail again for the same reason")
    expect(fail_again).to_contain_text("field 'order_id': cannot convert 'oops-1' to uuid · 1")
    expect(fail_again).to_contain_text("invalid JSON · 1")
    expect(replay.locator("#replay-other-count")).to_have_text(str(OTHER_REASON))
    expect(replay.locator("#replay-fail-other")).to_contain_text("field 'seq': cannot convert '7b' to int")
    expect(replay.locator("#replay-passing-count")).to_have_text(str(PASSING))
    check_page(page, screen, "31-replay-dialog", full_page=False)
    replay.get_by_role("button", name="Cancel").click()
    expect(replay).to_be_hidden()
    expect(page.locator("#dead-letter-count")).to_have_text(str(len(DEAD_LETTERS)))

    page.locator("#dead-letters-replay").click()
    replay.locator("#replay-confirm").click()
    expect(page.locator(".flash")).to_contain_text(f"Replayed {len(DEAD_LETTERS)} dead letters to their topics.")
    expect(page.locator("#dead-letter-count")).to_have_text("0")
    page.locator("#dead-letters-replay").click()
    expect(replay.locator("#replay-nothing")).to_be_visible()
