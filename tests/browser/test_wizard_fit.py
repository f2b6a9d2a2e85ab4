"""Mistakes the wizard catches against its sample, in Chromium with the real broker and ClickHouse:
a field mapped to a column type its values cannot fit, a dedup key no event has, an event time the engine
cannot read. Each shows next to the field that causes it and blocks Next until it is fixed (or, for the
mapping, until the user accepts dead letters for the field)."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.browser.test_wizard_walkthrough import next_step, shot
from tests.webapp.wizard.kafka_events import produce
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.wizard.models import WizardDraft

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
EVENTS = 10


def signups(count: int) -> list[dict]:
    return [
        {
            "event_id": f"e-{i}",
            "user_id": f"u-{i}",  # text: no value converts to an integer column
            "amount": str(i) if i < 7 else f"{i} EUR",  # 7 of 10 convert to an integer
            "ts": f"2026-11-2{i % 9}T10:00Z",  # looks like a time, but the engine reads none (no seconds)
            "created_at": f"2026-11-2{i % 9}T10:00:00Z",
        }
        for i in range(count)
    ]


@pytest.fixture
def setup(page: Page, live_server, kafka_bootstrap, clickhouse_server):
    """A logged-in user with saved connections and a topic of sign-ups, at the wizard's dedup step."""
    user = get_user_model().objects.create_user("analyst", password="analyst-pass-123")
    kafka = kafka_connection_create(owner=user, data={"name": "Local broker", "bootstrap_servers": kafka_bootstrap})
    clickhouse = clickhouse_connection_create(
        owner=user, data={"name": "Local ClickHouse", "host": clickhouse_server.host, "port": clickhouse_server.port}
    )
    topic = f"signups_{uuid.uuid4().hex[:6]}"
    produce(kafka_bootstrap, topic, signups(EVENTS))
    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("analyst")
    page.get_by_label("Password").fill("analyst-pass-123")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/pipelines/new/")
    expect(page.locator("h1")).to_have_text("Kafka connection")
    page.locator("#id_connection").select_option(str(kafka.pk))
    next_step(page, "Topics")
    page.locator(f'#topics-table input[value="{topic}"]').check()
    next_step(page, "Sample and schema")
    page.get_by_label("Oldest").check()
    page.locator("#fetch-sample").click()
    expect(page.locator("#samples .sample")).to_have_count(EVENTS)
    expect(page.locator(".htmx-request")).to_have_count(0)
    rows = page.locator("#schema-rows tr")
    expect(rows).to_have_count(5)
    page.locator("#add-field").click()  # a field no event has, added by hand
    expect(rows).to_have_count(6)
    rows.last.locator("input[type=text]").fill("request_id")
    paths = page.locator("#schema-rows input[type=text]")
    for i, path in enumerate(["event_id", "user_id", "amount", "ts", "created_at", "request_id"]):
        expect(paths.nth(i)).to_have_value(path)
    next_step(page, "Deduplication")
    return {"clickhouse": clickhouse, "topic": topic}


def test_a_mapping_that_cannot_fit_blocks_until_dead_letters_are_accepted(page: Page, setup):
    page.get_by_label("event_id").check()
    expect(page.locator("#key-presence")).not_to_have_class("htmx-request")
    page.locator("#next").click()
    shot(page, "fit-04-dedup-next")
    expect(page.locator("h1")).to_have_text("Join another topic")
    next_step(page, "Filter and computed fields")  # no join
    next_step(page, "ClickHouse destination")
    page.locator("#id_connection").select_option(str(setup["clickhouse"].pk))
    page.locator("#use-connection").click()
    page.get_by_label("A new table").check()
    page.get_by_label("New table name").fill(f"signups_{uuid.uuid4().hex[:6]}")
    page.locator("#field-order_by").get_by_label("event_id").check()
    next_step(page, "Mapping")

    # The proposed types fit every sampled value, except for `ts`: the sample step took it for a time, but the
    # engine reads none of its values (no seconds). Leave it out.
    user_id_row = page.locator("#mapping-table tr", has=page.locator('input[value="user_id"]'))
    expect(user_id_row).to_contain_text("fits")
    expect(page.locator("#fit-ts")).to_contain_text("cannot fit: none of 10 sampled values converts to DateTime64")
    expect(page.locator("#fit-ts")).to_contain_text("field 'ts': cannot convert '2026-11-20T10:00Z' to datetime")
    page.get_by_label("Write ts").uncheck()
    # The mistake: text into integers. Next stays on the step, with the verdict next to the field.
    page.get_by_label("Type of user_id").select_option("Int32")
    page.get_by_label("Type of amount").select_option("Int32")
    page.locator("#next").click()
    expect(page.locator("h1")).to_have_text("Mapping")
    verdict = page.locator("#fit-user_id")
    expect(verdict).to_contain_text("cannot fit: none of 10 sampled values converts to Int32")
    expect(verdict).to_contain_text("column 'user_id': cannot write 'u-0' to Int32")
    expect(page.locator(".alert-error")).to_contain_text("'user_id' cannot fit Int32")
    # Some amounts fit: a warning, not a block.
    expect(page.locator("#fit-amount")).to_contain_text("fits 7 of 10 sampled values")
    expect(page.locator("#fit-amount")).to_contain_text("cannot write '7 EUR' to Int32")
    shot(page, "fit-07-mapping-cannot-fit")

    # "Check mapping" agrees, and says so in the banner once dead letters are accepted for the field.
    verdict.get_by_label("Accept dead letters for user_id").check()
    page.locator("#check-mapping").click()
    expect(page.locator("#mapping-ok")).to_contain_text("some sampled values would go to dead letters")
    expect(page.locator("#mapping-ok")).to_contain_text("user_id (none fit), amount (7 of 10 fit)")
    expect(page.get_by_label("Accept dead letters for user_id")).to_be_checked()
    next_step(page, "Review and deploy")

    draft = WizardDraft.objects.get()
    assert draft.data["mapping"]["accept_dead_letters"] == ["user_id"]
    assert ("user_id", "user_id", "Int32") in [(c.field, c.column, c.type) for c in draft.spec.sink.columns]


def test_a_dedup_key_no_event_has_and_an_unreadable_event_time_block_the_step(page: Page, setup):
    # A key no sampled event has: said next to the keys as soon as it is ticked, and Next is refused.
    page.get_by_label("request_id").check()
    keys = page.locator("#field-keys")
    expect(keys.locator("[data-presence=request_id]")).to_have_text(
        "No sampled event has a usable dedup key 'request_id': 10 miss it or have null (of 10). "
        "Those events would go to dead letters."
    )
    page.locator("#next").click()
    expect(page.locator("h1")).to_have_text("Deduplication")
    expect(keys.locator(".error")).to_have_text("No sampled event has a usable 'request_id': choose another key.")
    expect(keys.locator("[data-presence=request_id]")).to_be_visible()
    shot(page, "fit-04-dedup-missing-key")

    # The real key, but an event-time field the engine cannot read ("10:00Z" has no seconds).
    page.get_by_label("request_id").uncheck()
    page.get_by_label("event_id").check()
    expect(keys.locator("[data-presence]")).to_have_count(0)
    page.get_by_label("An event-time field").check()
    page.get_by_label("Event-time field", exact=True).select_option("ts")
    time_field = page.locator("#field-event_time_field").locator("..")
    expect(time_field.locator("[data-presence=ts]")).to_contain_text(
        "No sampled event has a usable event time 'ts': 10 have a value the engine cannot read (of 10). "
        "Those events would go to dead letters. For example: 2026-11-20T10:00Z"
    )
    page.locator("#next").click()
    expect(page.locator("h1")).to_have_text("Deduplication")
    expect(page.locator("#field-event_time_field .error")).to_have_text(
        "No sampled event has a usable 'ts': choose another field, or ingestion time."
    )
    expect(time_field.locator("[data-presence=ts]")).to_be_visible()
    shot(page, "fit-04-dedup-unreadable-time")

    page.get_by_label("Event-time field", exact=True).select_option("created_at")
    expect(page.locator("[data-presence=created_at]")).to_have_count(0)
    next_step(page, "Join another topic")
    draft = WizardDraft.objects.get()
    assert draft.spec.dedup.keys == ["event_id"]
    assert draft.spec.dedup.event_time_field == "created_at"
