"""An analyst joins orders with their payments in the wizard's join step, in Chromium on a laptop's screen and on a
phone's, against the real broker: the payments topic sampled and its fields inferred, its dedup key, the join key,
a left join previewed from the two samples, a key of another type refused next to it, then fixed and saved. The
step's screenshots at both widths go to docs/ (wizard-join-<screen>.png), and must read (tests/browser/screens.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.browser.screens import Screen, check_page
from tests.browser.test_wizard_walkthrough import next_step
from webapp.connections.services import kafka_connection_create
from webapp.wizard.models import WizardDraft

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS = Path(__file__).resolve().parents[2] / "docs"
ORDERS = [
    {"order_id": f"o-{i}", "amount": 10.0 + i, "customer": {"id": f"c-{i % 2}"}, "status": "new"} for i in range(1, 5)
]
PAYMENTS = [
    {"payment_id": "p-1", "order_id": "o-1", "paid": 11.0},
    {"payment_id": "p-2", "order_id": "o-2", "paid": 12.0},
]


def produce(bootstrap: str, topic: str, events: list[dict]) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for event in events:
        producer.produce(topic, json.dumps(event).encode())
    assert producer.flush(10) == 0


def test_join_orders_with_their_payments(page: Page, screen: Screen, live_server, kafka_bootstrap):
    user = get_user_model().objects.create_user("analyst", password="analyst-pass-123")
    kafka = kafka_connection_create(owner=user, data={"name": "Local broker", "bootstrap_servers": kafka_bootstrap})
    suffix = uuid.uuid4().hex[:6]
    orders, payments = f"orders_{suffix}", f"payments_{suffix}"
    produce(kafka_bootstrap, orders, ORDERS)
    produce(kafka_bootstrap, payments, PAYMENTS)
    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("analyst")
    page.get_by_label("Password").fill("analyst-pass-123")
    page.get_by_role("button", name="Log in").click()

    # Steps 1-4: the orders, sampled, deduplicated by order_id.
    page.goto(f"{live_server.url}/pipelines/new/")
    page.locator("#id_connection").select_option(str(kafka.pk))
    next_step(page, "Topics")
    page.locator(f'#topics-table input[value="{orders}"]').check()
    next_step(page, "Sample and schema")
    page.get_by_label("Oldest").check()
    page.locator("#fetch-sample").click()
    expect(page.locator("#samples .sample")).to_have_count(len(ORDERS))
    expect(page.locator("#schema-rows tr")).to_have_count(4)  # order_id, amount, customer.id, status
    expect(page.locator(".htmx-request")).to_have_count(0)
    next_step(page, "Deduplication")
    page.get_by_label("order_id").check()
    next_step(page, "Join another topic")

    # The join step: off until chosen; then the payments topic, sampled, its fields inferred and editable.
    expect(page.locator("#join-settings")).to_be_hidden()
    page.get_by_label("Join another topic").check()
    expect(page.locator("#join-settings")).to_be_visible()
    page.get_by_label("Topic to join").select_option(payments)
    page.locator("#join-settings").get_by_label("Oldest").check()
    page.locator("#fetch-right-sample").click()
    right_fields = page.locator("#right-schema-rows input[type=text]")
    expect(right_fields).to_have_count(3)
    expect(page.locator(".htmx-request")).to_have_count(0)
    expect(page.locator('#right-schema-rows input[value="payment_id"]')).to_have_count(1)
    expect(page.locator("#join-right-area .alert-error")).to_have_count(0)
    # The payments' own dedup key, and the join key: order_id on both sides.
    page.locator("#field-right-keys").get_by_label("payment_id").check()
    page.get_by_label("Key field of this topic").select_option("order_id")
    page.get_by_label("Key field of the joined topic").fill("order_id")
    page.get_by_label("Left: also write the others").check()

    # The preview: every order, those without a payment with empty payment fields.
    page.locator("#preview-join").click()
    preview = page.locator("#join-preview-table tbody tr")
    expect(preview).to_have_count(len(ORDERS))
    expect(preview.filter(has_text="o-1")).to_contain_text("p-1")
    expect(preview.filter(has_text="o-3")).to_contain_text("empty")
    expect(page.locator("#join-preview-note")).to_contain_text("4 joined rows")
    check_page(page, screen, "wizard-join")
    expect(page.locator(".htmx-request")).to_have_count(0)
    page.screenshot(path=str(DOCS / f"wizard-join-{screen.name}.png"), full_page=True)

    # A key of another type on the right: refused next to the key, nothing saved.
    order_id_row = page.locator("#right-schema-rows tr", has=page.locator('input[value="order_id"]'))
    order_id_row.locator("select").select_option("int")
    page.locator("#next").click()
    expect(page.locator("h1")).to_have_text("Join another topic")
    expect(page.locator("#join-key-rows .error")).to_have_text(
        "Key types differ: 'order_id' is int on the right, 'order_id' is string on the left; "
        "join fields of the same type"
    )
    check_page(page, screen, "wizard-join-key-types")
    draft = WizardDraft.objects.get()
    assert "join" not in draft.data["spec"]

    # Fixed: saved, and the next step offers both sides' fields.
    page.locator('#right-schema-rows tr:has(input[value="order_id"]) select').select_option("string")
    next_step(page, "Filter and computed fields")
    expect(page.locator("main details")).to_contain_text("right.paid")
    draft.refresh_from_db()
    join = draft.spec.join
    assert join is not None and join.source.topics == [payments] and join.type == "left"
    assert [(k.left, k.right) for k in join.keys] == [("order_id", "order_id")]
    assert join.dedup is not None and join.dedup.keys == ["payment_id"]
