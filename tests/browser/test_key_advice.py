"""The wizard's dedup step in Chromium: the advisor measures the topic and preselects its window."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.browser.screens import Screen, check_page
from webapp.connections.services import kafka_connection_create
from webapp.wizard.draft_spec import load_draft_spec
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_get_or_create, draft_save_step

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "wizard"
ORIGINALS = 400  # one a second: 400 s of events
COPIES = 40  # 10% of the originals, each sent again 90 s later -> the smallest window covering it is 5m
BASE_MS = int(datetime(2026, 11, 1, 12, 0, tzinfo=UTC).timestamp() * 1000)


@pytest.fixture
def resent_topic(kafka_bootstrap) -> str:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"resent_{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=2)]).values():
        future.result(timeout=10)
    records = [(BASE_MS + i * 1_000, i) for i in range(ORIGINALS)]
    records += [(BASE_MS + i * 10_000 + 90_000, i * 10) for i in range(COPIES)]
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for timestamp, i in sorted(records):
        producer.produce(topic, value=json.dumps(event(i)).encode(), partition=i % 2, timestamp=timestamp)
    assert producer.flush(10) == 0
    return topic


def event(i: int, plan: str | None = None) -> dict:
    return {"event_id": str(uuid.UUID(int=i + 1, version=4)), "plan": plan or ["free", "pro"][i % 2]}


def test_dedup_step_preselects_the_recommended_window(page: Page, live_server, kafka_bootstrap, resent_topic):
    user = get_user_model().objects.create_user("analyst", password="analyst-pass-123")
    connection = kafka_connection_create(owner=user, data={"name": "local", "bootstrap_servers": kafka_bootstrap})
    draft = draft_get_or_create(user=user)
    draft_save_step(draft=draft, step="kafka", values={"connection_id": connection.pk}, advance=True)
    topics = load_draft_spec({"source": {"topics": [resent_topic]}})
    draft_save_step(draft=draft, step="topics", spec=topics, advance=True)
    fields = [{"path": "event_id", "type": "uuid"}, {"path": "plan", "type": "string"}]
    with_fields = load_draft_spec({"source": {"topics": [resent_topic], "fields": fields}})
    draft_save_step(draft=draft, step="sample", values={"events": []}, spec=with_fields, advance=True)
    page.set_default_timeout(20_000)

    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("analyst")
    page.get_by_label("Password").fill("analyst-pass-123")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/wizard/{draft.pk}/dedup/")
    expect(page.locator("h1")).to_have_text("Deduplication")

    # Before a key is chosen, the advisor already points at the identifier-like field.
    expect(page.locator("#key-candidates")).to_contain_text("event_id")
    expect(page.locator("#id_window")).to_have_value("1h")  # the default, until there is a recommendation

    page.get_by_label("event_id").check()
    expect(page.locator("#dup-count")).to_have_text(str(COPIES))
    expect(page.locator("#dup-pct")).to_have_text("9.1")  # 40 of 440
    expect(page.locator("#delay-max")).to_have_text("1.5 min")
    expect(page.locator("#recommended-window")).to_have_text("5m")
    expect(page.locator("#id_window")).to_have_value("5m")  # preselected
    expect(page.locator("#id_state_store")).to_have_count(0)  # the state is always in RocksDB: nothing to choose
    expect(page.locator("#state-estimate")).to_contain_text("Dedup state for 5m: about")
    # 400 keys over 8 minutes, kept for 5: a few hundred keys, some KB: not rounded down to "0 MB".
    expect(page.locator("#state-estimate-disk")).to_have_text(re.compile(r"^\d+(\.\d+)? KB$"))
    expect(page.locator("#window-reason")).to_contain_text("5m covers 99.9% of the 40 duplicate delays")
    expect(page.locator("#delay-histogram .histogram-row")).to_have_count(4)
    expect(page.locator(".htmx-request")).to_have_count(0)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "04-dedup-advisor.png"), full_page=True)

    # A window the user picks is kept when the figures are measured again.
    page.locator("#id_window").select_option("1d")
    page.locator("#measure-again").click()
    expect(page.locator("#analysis-progress")).to_be_hidden()
    expect(page.locator("#recommended-window")).to_have_text("5m")
    expect(page.locator("#id_window")).to_have_value("1d")

    # Cancel stops a measurement in flight.
    page.route("**/dedup/analysis/", lambda route: None)  # never answered: the request stays in flight
    page.locator("#measure-again").click()
    expect(page.locator("#analysis-progress")).to_be_visible()
    page.locator("#cancel-analysis").click()
    expect(page.locator("#analysis-cancelled")).to_be_visible()
    expect(page.locator("#analysis-progress")).to_be_hidden()

    page.unroute("**/dedup/analysis/")
    page.locator("#next").click()
    expect(page.locator("h1")).to_have_text("Join another topic")  # the optional step after dedup
    draft.refresh_from_db()
    dedup = draft.data["spec"]["dedup"]
    assert dedup["window"] == "1d" and dedup["keys"] == ["event_id"]
    assert "state_store" not in dedup  # deprecated: never written (the state is always in RocksDB)


def test_the_advised_window_is_what_gets_deployed_unless_the_user_picks_another(
    page: Page, screen: Screen, live_server, kafka_bootstrap, resent_topic
):
    user = get_user_model().objects.create_user("analyst", password="analyst-pass-123")
    connection = kafka_connection_create(owner=user, data={"name": "local", "bootstrap_servers": kafka_bootstrap})
    draft = draft_get_or_create(user=user)
    draft_save_step(draft=draft, step="kafka", values={"connection_id": connection.pk}, advance=True)
    fields = [{"path": "event_id", "type": "uuid"}, {"path": "plan", "type": "string"}]
    with_fields = load_draft_spec({"source": {"topics": [resent_topic], "fields": fields}})
    draft_save_step(draft=draft, step="topics", spec=with_fields, advance=True)
    draft_save_step(draft=draft, step="sample", values={"events": []}, spec=with_fields, advance=True)
    # One event sent again 30 s later with another plan: a duplicate of event_id whose payload differs.
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    again = json.dumps(event(0, plan="pro")).encode()
    producer.produce(resent_topic, value=again, partition=0, timestamp=BASE_MS + 30_000)
    assert producer.flush(10) == 0
    page.set_default_timeout(30_000)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("analyst")
    page.get_by_label("Password").fill("analyst-pass-123")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/wizard/{draft.pk}/dedup/")

    # Next before a key is chosen is refused; the default window it carried is not a choice of the user's.
    event_id = page.locator("#key-candidates tr[data-candidate='event_id']")
    expect(event_id).to_contain_text("1 of its duplicates differs from the first event")
    page.locator("#next").click()
    expect(page.locator("#field-keys .error")).to_contain_text("Choose at least one key field")
    expect(page.locator("#id_window")).to_have_value("1h")
    # A field that looks like a key is chosen from the advice; the window it recommends is preselected.
    candidate = page.locator("#key-candidates tr[data-candidate='event_id']")
    candidate.get_by_role("button", name="Use as key").click()
    expect(page.locator("#field-keys").get_by_label("event_id")).to_be_checked()
    expect(page.locator("#field-keys .error")).to_have_count(0)  # the refusal was about no key: there is one now
    expect(page.locator("#key-candidates tr[data-candidate='event_id']")).to_contain_text("chosen")
    expect(page.locator("#recommended-window")).to_have_text("5m")
    expect(page.locator("#id_window")).to_have_value("5m")
    check_page(page, screen, "40-dedup-advised")
    page.locator("#next").click()
    expect(page.locator("h1")).to_have_text("Join another topic")  # the optional step after dedup
    assert load_draft_spec(WizardDraft.objects.get(pk=draft.pk).data["spec"]).dedup.window == "5m"

    # The review step: advice and choice side by side.
    WizardDraft.objects.filter(pk=draft.pk).update(reached="review")
    page.goto(f"{live_server.url}/wizard/{draft.pk}/review/")
    expect(page.locator("#advised-window")).to_have_text("5m")
    expect(page.locator("#chosen-window")).to_have_text("5m")
    expect(page.locator("#window-chosen-col")).to_contain_text("as advised")
    expect(page.locator("#window-warning")).to_have_count(0)

    # A window the user picks stays theirs: measured again, it is not replaced, and the review warns past 10x.
    page.goto(f"{live_server.url}/wizard/{draft.pk}/dedup/")
    page.locator("#id_window").select_option("1h")
    page.locator("#next").click()
    expect(page.locator("h1")).to_have_text("Join another topic")  # the optional step after dedup
    page.goto(f"{live_server.url}/wizard/{draft.pk}/dedup/")
    expect(page.locator("#recommended-window")).to_have_text("5m")
    expect(page.locator(".htmx-request")).to_have_count(0)
    expect(page.locator("#id_window")).to_have_value("1h")
    page.goto(f"{live_server.url}/wizard/{draft.pk}/review/")
    expect(page.locator("#chosen-window")).to_have_text("1h")
    expect(page.locator("#review-no-table")).to_have_text("not chosen yet (step 7)")
    expect(page.locator("#window-factor")).to_have_text("12\u00d7 longer than advised")
    warning = page.locator("#window-warning")
    expect(warning).to_contain_text("is 12\u00d7 the advised 5m")
    advised_state = page.locator("#advised-state b").inner_text()
    chosen_state = page.locator("#chosen-state b").inner_text()
    assert advised_state != chosen_state
    expect(warning).to_contain_text(
        f"its dedup state holds about 12\u00d7 as many keys: about {chosen_state}, against {advised_state} for the"
    )
    check_page(page, screen, "41-review-window-warning")

    # The review offers the user's channels: none yet says so, with the way to add one and back.
    expect(page.locator("#review-alerts-nobody")).to_contain_text("this pipeline's alerts would reach nobody")
    page.locator("#review-add-channel").click()
    expect(page.locator("h1")).to_have_text("Alert channels")
    page.get_by_label("Name").fill("On-call email")
    page.get_by_label("Kind").select_option("email")
    page.get_by_label("Email addresses").fill("oncall@example.com")
    page.locator("#add-channel-submit").click()
    expect(page.locator("h1")).to_have_text("Review and deploy")
    expect(page.locator("#review-channels")).to_contain_text("On-call email")
    expect(page.locator("#review-channels")).to_contain_text("oncall@example.com")
    expect(page.locator("#review-alerts-nobody")).to_have_count(0)
    check_page(page, screen, "42-review-channels")
