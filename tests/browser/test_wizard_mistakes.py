"""Mistakes are caught where they are made, and what was typed is kept, in Chromium against the real
broker and ClickHouse: a connection that does not answer is not saved (unless "Save anyway") and the step stays,
with the error next to the field; entering the name again works; the configured addresses are offered; the
edited schema and an empty-topic answer survive a reload and a failed Next."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from localstack.processes import free_port
from tests.webapp.wizard.kafka_events import produce, user_events
from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.connections.services import kafka_connection_create
from webapp.wizard.models import WizardDraft

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def user():
    return get_user_model().objects.create_user("analyst", password="analyst-pass-123")


def log_in(page: Page, live_server, path: str) -> None:
    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/login/?next={path}")
    page.get_by_label("Username").fill("analyst")
    page.get_by_label("Password").fill("analyst-pass-123")
    page.get_by_role("button", name="Log in").click()


def draft_at(user, step: str, data: dict) -> WizardDraft:
    """A new-pipeline draft that has reached `step` with `data` (the earlier steps' values, as Next saves them:
    the spec's fields under "spec", the rest per step; see webapp.wizard.draft_spec)."""
    return WizardDraft.objects.create(user=user, data=data, step=step, reached=step)


def kept(response, check) -> bool:
    """Whether `response` answers the page's keep-input request for a form state that passes `check`."""
    if not (response.url.endswith("/keep/") and response.status == 204):
        return False
    return check(parse_qs(response.request.post_data or ""))


def schema_row(posted: dict[str, list[str]], path: str) -> dict[str, str] | None:
    for key, values in posted.items():
        if key.endswith("-path") and values == [path]:
            prefix = key.removesuffix("path")
            return {"type": posted.get(f"{prefix}type", [""])[0]}
    return None


def test_a_refused_kafka_address_is_not_saved_and_the_step_stays(
    page: Page, live_server, kafka_bootstrap, settings, user
):
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_bootstrap  # what `make up` configures
    kafka_connection_create(owner=user, data={"name": "Old cluster", "bootstrap_servers": kafka_bootstrap})
    refused = f"127.0.0.1:{free_port()}"
    log_in(page, live_server, "/pipelines/new/")
    expect(page.locator("h1")).to_have_text("Kafka connection")

    # The saved-connection selector is needed when chosen: no "(optional)" on its label.
    expect(page.locator("#field-connection label")).to_have_text("Connection")
    page.get_by_label("A new connection").check()
    # The configured broker is offered.
    expect(page.locator("#id_new-bootstrap_servers")).to_have_value(kafka_bootstrap)

    page.locator("#id_new-name").fill("Local broker")
    page.locator("#id_new-bootstrap_servers").fill(refused)
    page.locator("#next").click()
    expect(page.locator("h1")).to_have_text("Kafka connection")
    expect(page.locator("#field-new-bootstrap_servers .error")).to_contain_text(
        f"Nothing accepts connections at {refused} (connection refused)"
    )
    expect(page.locator("#save-anyway")).to_be_visible()
    assert not KafkaConnection.objects.filter(name="Local broker").exists()

    # A reload keeps what was typed.
    page.goto(page.url)
    expect(page.locator("#id_new-name")).to_have_value("Local broker")
    expect(page.locator("#id_new-bootstrap_servers")).to_have_value(refused)

    # "Save anyway" saves it and moves on.
    page.locator("#next").click()
    page.locator("#save-anyway").click()
    expect(page.locator("h1")).to_have_text("Topics")
    assert KafkaConnection.objects.get(name="Local broker").bootstrap_servers == refused

    # Back, and the same name again with the right address: no "the workspace already has a connection named…".
    page.locator("#back").click()
    expect(page.locator("h1")).to_have_text("Kafka connection")
    page.get_by_label("A new connection").check()
    page.locator("#id_new-name").fill("Local broker")
    page.locator("#id_new-bootstrap_servers").fill(kafka_bootstrap)
    page.locator("#next").click()
    expect(page.locator("h1")).to_have_text("Topics")
    assert [c.bootstrap_servers for c in KafkaConnection.objects.filter(name="Local broker")] == [kafka_bootstrap]


def test_the_clickhouse_step_offers_the_configured_server_and_keeps_a_refused_one_unsaved(
    page: Page, live_server, kafka_bootstrap, clickhouse_server, settings, user
):
    settings.CLICKHOUSE_HOST = clickhouse_server.host
    settings.CLICKHOUSE_PORT = clickhouse_server.port  # not 8123
    kafka = kafka_connection_create(owner=user, data={"name": "k", "bootstrap_servers": kafka_bootstrap})
    draft = draft_at(
        user,
        "clickhouse",
        {
            "kafka": {"connection_id": kafka.pk},
            "sample": {"events": []},
            "spec": {"source": {"topics": ["signups"], "fields": [{"path": "event_id", "type": "uuid"}]}},
        },
    )
    log_in(page, live_server, f"/wizard/{draft.pk}/clickhouse/")
    expect(page.locator("h1")).to_have_text("ClickHouse destination")
    expect(page.locator("#id_new-host")).to_have_value(clickhouse_server.host)
    expect(page.locator("#id_new-port")).to_have_value(str(clickhouse_server.port))

    page.locator("#id_new-name").fill("Warehouse")
    page.locator("#id_new-port").fill(str(free_port()))
    page.locator("#use-connection").click()
    expect(page.locator("#field-new-port .error")).to_contain_text("connection refused")
    expect(page.locator("#save-anyway")).to_be_visible()
    assert not ClickHouseConnection.objects.filter(name="Warehouse").exists()

    page.locator("#id_new-port").fill(str(clickhouse_server.port))
    page.locator("#use-connection").click()
    expect(page.locator("#change-connection")).to_be_visible()  # connected: the destination part
    assert ClickHouseConnection.objects.get(name="Warehouse").port == clickhouse_server.port


def test_reload_keeps_the_edited_schema(page: Page, live_server, kafka_bootstrap, user):
    topic = f"signups_{uuid.uuid4().hex[:6]}"
    produce(kafka_bootstrap, topic, user_events(10, duplicates=0))
    kafka = kafka_connection_create(owner=user, data={"name": "k", "bootstrap_servers": kafka_bootstrap})
    draft = draft_at(user, "sample", {"kafka": {"connection_id": kafka.pk}, "spec": {"source": {"topics": [topic]}}})
    log_in(page, live_server, f"/wizard/{draft.pk}/sample/")
    schema = page.locator("#schema-rows")
    expect(schema.locator('input[value="event_id"]')).to_have_count(1)  # fetched and inferred on the first visit

    # The page keeps the input while it is typed: wait for the request that carries both edits.
    def both_edits(posted: dict[str, list[str]]) -> bool:
        return schema_row(posted, "age") == {"type": "string"} and schema_row(posted, "referrer") is not None

    with page.expect_response(lambda r: kept(r, both_edits)):
        schema.locator("tr", has=page.locator('input[value="age"]')).locator("select").select_option("string")
        page.locator("#add-field").click()
        schema.locator("tr").last.locator("input[type=text]").fill("referrer")

    page.reload()
    expect(page.locator("h1")).to_have_text("Sample and schema")
    expect(schema.locator('input[value="referrer"]')).to_have_count(1)
    expect(schema.locator("tr", has=page.locator('input[value="age"]')).locator("select")).to_have_value("string")
    expect(schema.locator('input[value="event_id"]')).to_have_count(1)


def test_an_empty_topic_stays_empty_after_a_failed_next_and_a_reload(page: Page, live_server, kafka_bootstrap, user):
    topic = f"empty_{uuid.uuid4().hex[:6]}"
    produce(kafka_bootstrap, topic, [])
    kafka = kafka_connection_create(owner=user, data={"name": "k", "bootstrap_servers": kafka_bootstrap})
    draft = draft_at(user, "sample", {"kafka": {"connection_id": kafka.pk}, "spec": {"source": {"topics": [topic]}}})
    log_in(page, live_server, f"/wizard/{draft.pk}/sample/")
    expect(page.locator("#empty-topic")).to_be_visible()

    page.locator("#next").click()  # no fields yet
    expect(page.get_by_role("alert")).to_contain_text("Add at least one field")
    expect(page.locator("#empty-topic")).to_be_visible()
    expect(page.get_by_text("Fetch a sample to see real events")).to_have_count(0)

    page.goto(page.url)
    expect(page.locator("#empty-topic")).to_be_visible()
