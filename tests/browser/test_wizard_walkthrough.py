"""An analyst walks the whole wizard in Chromium, on a laptop's screen and on a phone's, on a demo-like topic with
duplicates, to a saved, deploy-requested pipeline. Every step must read at both widths (nothing cut off, no
sideways scrolling: tests/browser/screens.py); a screenshot of each goes to test-artifacts/pages/<screen>/."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.browser.screens import LAPTOP, SCREENS, Screen, check_page, nav_link
from tests.webapp.wizard.kafka_events import produce, user_events
from webapp.pipelines.models import Pipeline

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "wizard"
EVENTS = 30
DUPLICATES = 4


@pytest.fixture
def demo_topic(kafka_bootstrap) -> str:
    topic = f"users_demo_{uuid.uuid4().hex[:6]}"
    produce(kafka_bootstrap, topic, user_events(EVENTS, duplicates=DUPLICATES), partitions=2)
    return topic


def shot(page: Page, name: str, screen: Screen | None = None) -> None:
    """A screenshot of the step; at a given screen size, also checked for cut text and sideways scrolling."""
    if screen is not None:
        check_page(page, screen, f"wizard-{name}")
        return
    expect(page.locator(".htmx-request")).to_have_count(0)  # no request (and no spinner) in flight
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def next_step(page: Page, expected_title: str) -> None:
    page.locator("#next").click()
    expect(page.locator("h1")).to_have_text(expected_title)


def publish_metrics(redis_url: str, job_name: str, batches: int) -> None:
    """What the Spark job publishes per micro-batch, through its own publisher (spark_jobs.metrics)."""
    from spark_jobs.metrics import BatchMetrics, MetricsPublisher

    publisher = MetricsPublisher(job_name, redis_url)
    for batch in range(batches):
        publisher.publish(
            BatchMetrics(
                pipeline=job_name,
                batch_id=batch,
                timestamp=f"2026-11-21T10:{batch:02d}:00Z",
                input_rows=800 + 40 * (batch % 5),
                rows_written=720 + 30 * (batch % 5),
                duplicates_dropped=70 + 5 * (batch % 3),
                dead_letters=0,
                filtered_out=10,
                batch_duration_ms=400,
                total_lag=max(0, 500 - 40 * batch),
            )
        )


def test_walk_the_wizard_to_a_deploy_requested_pipeline(
    page: Page,
    screen: Screen,
    live_server,
    kafka_bootstrap,
    clickhouse_server,
    redis_url,
    settings,
    demo_topic,
    celery_app,
):
    # celery_app: Deploy sends its task to the test's Redis (alone, this test found no broker at the default address).
    get_user_model().objects.create_user("analyst", password="analyst-pass-123")
    settings.REDIS_URL = redis_url
    page.set_default_timeout(20_000)

    # Log in: the pipeline list is the home page.
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    shot(page, "00-login", screen)
    page.get_by_label("Username").fill("analyst")
    page.get_by_label("Password").fill("analyst-pass-123")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("h1")).to_have_text("Pipelines")
    shot(page, "00-pipelines-empty", screen)
    page.get_by_role("link", name="Create your first pipeline").click()

    # 1. Kafka: a new connection, tested before it is saved.
    expect(page.locator("h1")).to_have_text("Kafka connection")
    page.get_by_label("A new connection").check()
    page.locator("#id_new-name").fill("Local broker")
    page.locator("#id_new-bootstrap_servers").fill(kafka_bootstrap)
    page.locator("#test-connection").click()
    expect(page.locator("#connection-ok")).to_contain_text("1 broker")
    shot(page, "01-kafka", screen)
    next_step(page, "Topics")

    # 2. Topics: search, then choose the demo topic.
    expect(page.locator("#topics-table")).to_be_visible()
    page.locator("#topic-search").fill(demo_topic[-6:])
    expect(page.locator("#topics-table tbody tr")).to_have_count(1)
    row = page.locator("#topics-table tbody tr", has_text=demo_topic)
    expect(row).to_contain_text("2")  # partitions
    expect(row).to_contain_text(f"≈ {EVENTS}")
    row.locator("input[type=checkbox]").check()
    shot(page, "02-topics", screen)
    next_step(page, "Sample and schema")

    # A later visit resumes the draft at the step it was on.
    page.goto(f"{live_server.url}/pipelines/new/")
    expect(page.locator("h1")).to_have_text("Sample and schema")

    # 3. Sample and schema: fetch the oldest 30, check the inferred types, add a field by hand.
    page.locator("#id_count").fill(str(EVENTS))
    page.get_by_label("Oldest").check()
    page.locator("#fetch-sample").click()
    expect(page.locator("#samples .sample")).to_have_count(EVENTS)
    schema = page.locator("#schema-rows")
    expect(schema.locator('input[value="event_id"]')).to_have_count(1)
    event_id_row = schema.locator("tr", has=page.locator('input[value="event_id"]'))
    expect(event_id_row.locator("select")).to_have_value("uuid")
    created_row = schema.locator("tr", has=page.locator('input[value="created_at"]'))
    expect(created_row.locator("select")).to_have_value("datetime")
    expect(schema.locator('input[value="address.city"]')).to_have_count(1)
    page.locator("#add-field").click()
    new_row = schema.locator("tr").last
    new_row.locator("input[type=text]").fill("referrer")
    shot(page, "03-sample", screen)
    next_step(page, "Deduplication")

    # 4. Dedup: the key's duplicates in the sample update live.
    page.get_by_label("event_id").check()
    expect(page.locator("#dup-count")).to_have_text(str(DUPLICATES))
    page.locator("#id_window").select_option("6h")
    shot(page, "04-dedup", screen)
    # Back keeps what was entered.
    page.locator("#back").click()
    expect(page.locator("h1")).to_have_text("Sample and schema")
    expect(page.locator('#schema-rows input[value="referrer"]')).to_have_count(1)
    next_step(page, "Deduplication")
    expect(page.get_by_label("event_id")).to_be_checked()
    expect(page.locator("#id_window")).to_have_value("6h")
    next_step(page, "Join another topic")
    # 4b. Join: optional, off unless chosen (tests/browser/test_wizard_join.py walks it).
    expect(page.get_by_label("No join: write this topic's events alone")).to_be_checked()
    next_step(page, "Filter and computed fields")

    # 5. Filter and computed fields: an error shows where it is; then a valid filter and a computed field.
    page.get_by_label("Filter").fill("age >")
    page.locator("#add-computed").click()
    computed = page.locator("#computed-rows tr").last
    computed.get_by_label("Name").fill("email_domain")
    computed.get_by_label("Expression").fill("split(email, '@')[1]")
    page.locator("#check-expressions").click()
    expect(page.locator(".expr-error")).to_be_visible()
    expect(page.locator("#field-filter .error")).to_contain_text("syntax error")
    shot(page, "05-transform-error", screen)
    # A typo in a field's name: the field it most likely meant is named.
    page.get_by_label("Filter").fill("agee >= 18")
    page.locator("#check-expressions").click()
    expect(page.locator("#field-filter .error")).to_contain_text("unknown field 'agee' (did you mean `age`?)")
    page.get_by_label("Filter").fill("age >= 18")
    page.locator("#check-expressions").click()
    expect(page.locator("#expressions-ok")).to_be_visible()
    # Tried on the sample: what the filter keeps; a function only Spark evaluates is named, never guessed.
    expect(page.locator("#filter-keeps")).to_have_text(f"The filter keeps {EVENTS} of {EVENTS}.")
    expect(page.locator('[data-unpreviewed="email_domain"]')).to_contain_text("split() is evaluated by the job only")
    shot(page, "05-transform", screen)
    next_step(page, "ClickHouse destination")

    # 6. ClickHouse: a new connection, tested, then a new ReplacingMergeTree table.
    page.get_by_label("A new connection").check()
    page.locator("#id_new-name").fill("Local ClickHouse")
    page.locator("#id_new-host").fill(clickhouse_server.host)
    page.locator("#id_new-port").fill(str(clickhouse_server.port))
    page.locator("#test-connection").click()
    expect(page.locator("#connection-ok")).to_contain_text("ClickHouse 26")
    shot(page, "06-clickhouse-connection", screen)
    page.locator("#use-connection").click()
    expect(page.locator("#change-connection")).to_be_visible()
    page.get_by_label("A new table").check()
    page.get_by_label("New table name").fill("user_signups")
    page.get_by_label("Engine").select_option("ReplacingMergeTree")
    # The new table is sorted by the dedup key, preselected.
    expect(page.locator("#field-order_by").get_by_label("event_id")).to_be_checked()
    expect(page.locator("#field-order_by input:checked")).to_have_count(1)
    shot(page, "06-clickhouse-destination", screen)
    next_step(page, "Mapping")

    # 7. Mapping: auto-mapped by name, checked before deploy.
    expect(page.locator("#mapping-table")).to_contain_text("email_domain")
    page.locator("#check-mapping").click()
    expect(page.locator("#mapping-ok")).to_be_visible()
    shot(page, "07-mapping", screen)
    next_step(page, "Review and deploy")

    # 8. Review: summary, the dedup window advised beside the one chosen, where alerts go, the spec; then Deploy.
    expect(page.locator("#spec-issues")).to_have_count(0)
    # The events were produced within a second: the advice is the shortest window, and only a lower bound.
    expect(page.locator("#advised-window")).to_have_text("at least 1m")
    expect(page.locator("#chosen-window")).to_have_text("6h")
    expect(page.locator("#window-factor")).to_have_text("360\u00d7 longer than advised")
    expect(page.locator("#window-note")).to_contain_text("The advice is a lower bound")
    expect(page.locator("#review-alerts")).to_contain_text("starts with 6 alert rules on")
    expect(page.locator("#review-alerts-nobody")).to_contain_text("this pipeline's alerts would reach nobody")
    expect(page.locator("#spec-json")).to_contain_text('"dedup"')
    page.get_by_label("Pipeline name").fill("user-signups")
    expect(page.locator("#spec-json")).to_contain_text('"name": "user-signups"')  # follows the typed name
    with page.expect_download() as download:
        page.locator("#download-spec").click()
    assert download.value.suggested_filename == "user-signups.json"
    shot(page, "08-review", screen)
    page.locator("#deploy").click()

    expect(page.locator("h1")).to_contain_text("user-signups")
    expect(page.locator("#pipeline-status")).to_have_text("Deploying")
    pipeline = Pipeline.objects.get(name="user-signups")
    publish_metrics(redis_url, pipeline.job_name, batches=12)  # as if the job were running
    page.reload()
    expect(page.locator("#metrics-totals")).to_contain_text("duplicates dropped")
    expect(page.locator("#metrics-charts canvas")).to_have_count(6)  # uPlot drew the charts
    shot(page, "09-pipeline", screen)
    assert pipeline.status == "deploy_requested"
    assert pipeline.stored_spec["source"]["topics"] == [demo_topic]
    assert pipeline.stored_spec["dedup"] == {
        "keys": ["event_id"],
        "window": "6h",
        "time": "ingestion",
        "event_time_field": None,
    }
    assert pipeline.stored_spec["filter"] == "age >= 18"
    assert pipeline.stored_spec["sink"]["engine"] == "ReplacingMergeTree"

    nav_link(page, screen, "Pipelines").click()
    expect(page.locator("#pipelines")).to_contain_text("Deploying")
    shot(page, "10-pipelines", screen)

    # The saved connections, secrets never shown; and the shared layout around another app's page.
    nav_link(page, screen, "Connections").click()
    expect(page.locator("#kafka-connections")).to_contain_text("Local broker")
    expect(page.locator("#clickhouse-connections")).to_contain_text("Local ClickHouse")
    page.locator("#clickhouse-connections").get_by_role("button", name="Test").click()
    expect(page.locator("#connection-ok")).to_contain_text("ClickHouse 26")
    shot(page, "11-connections", screen)
    nav_link(page, screen, "Health").click()
    expect(page.locator("h1")).to_have_text("Health")
    shot(page, "12-health", screen)


def test_edit_a_pipeline_into_an_existing_table(
    page: Page, live_server, kafka_bootstrap, clickhouse_server, demo_topic
):
    import clickhouse_connect

    from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
    from webapp.pipelines.services import pipeline_create

    user = get_user_model().objects.create_user("editor", password="editor-pass-123")
    kafka = kafka_connection_create(owner=user, data={"name": "Local broker", "bootstrap_servers": kafka_bootstrap})
    clickhouse = clickhouse_connection_create(
        owner=user, data={"name": "Local ClickHouse", "host": clickhouse_server.host, "port": clickhouse_server.port}
    )
    table = f"signups_{uuid.uuid4().hex[:6]}"
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    try:
        client.command(
            f"CREATE TABLE default.{table} (event_id UUID, email String, country LowCardinality(String), "
            "inserted_at DateTime DEFAULT now()) ENGINE = ReplacingMergeTree ORDER BY event_id"
        )
    finally:
        client.close()
    pipeline = pipeline_create(
        owner=user,
        name="signups",
        kafka_connection=kafka,
        clickhouse_connection=clickhouse,
        spec={
            "source": {"topics": [demo_topic], "fields": [{"path": "event_id", "type": "uuid"}]},
            "sink": {
                "clickhouse": {"database": "default"},
                "table": "signups_new",
                "order_by": ["event_id"],
                "columns": [{"field": "event_id", "column": "event_id", "type": "UUID"}],
            },
        },
    )
    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("editor")
    page.get_by_label("Password").fill("editor-pass-123")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("link", name="signups").click()
    page.get_by_role("link", name="Edit").click()

    # The stored pipeline fills every step; the sample is fetched again for the new fields.
    expect(page.locator("h1")).to_have_text("Kafka connection")
    expect(page.locator("#id_connection")).to_have_value(str(kafka.pk))
    next_step(page, "Topics")
    expect(page.locator(f'#topics-table input[value="{demo_topic}"]')).to_be_checked()
    next_step(page, "Sample and schema")
    page.locator("#fetch-sample").click()
    expect(page.locator("#samples .sample")).to_have_count(20)
    expect(page.locator('#schema-rows input[value="address.country"]')).to_have_count(1)
    next_step(page, "Deduplication")
    next_step(page, "Join another topic")
    next_step(page, "Filter and computed fields")
    next_step(page, "ClickHouse destination")

    # An existing table: the tables of the database load, then the chosen table's columns.
    page.get_by_label("An existing table").check()
    expect(page.locator("#id_table")).to_be_visible()
    page.locator("#id_table").select_option(table)
    expect(page.locator("#columns-table")).to_contain_text("inserted_at")
    expect(page.locator("#columns-table")).to_contain_text("required")
    # The table does not drop replayed inserts: the exact ALTER statement, applied with one click.
    expect(page.locator("#table-dedup-warning")).to_contain_text("at-least-once")
    expect(page.locator("#table-dedup-sql")).to_have_text(
        f"ALTER TABLE `default`.`{table}` MODIFY SETTING non_replicated_deduplication_window = 1000"
    )
    shot(page, "edit-06-existing-table")
    page.locator("#table-dedup-apply").click()
    expect(page.locator("#table-dedup-ok")).to_contain_text("exactly-once")
    next_step(page, "Mapping")

    # country has no field of that name and needs a value: flagged until address.country is mapped to it.
    expect(page.locator(".alert-error")).to_contain_text("country")
    shot(page, "edit-07-mapping-flagged")
    page.get_by_label("Column for address.country").select_option("country")
    page.locator("#check-mapping").click()
    expect(page.locator("#mapping-ok")).to_be_visible()
    next_step(page, "Review and deploy")
    expect(page.locator("#spec-json")).to_contain_text(f'"table": "{table}"')
    # What the edit changes from the saved version, before saving: the table, and the fields and columns added.
    diff = page.locator("#edit-diff")
    expect(diff.locator("h2")).to_have_text("What changes from version 1 (saved)")
    table_row = diff.locator('tr[data-path="sink.table"]')
    expect(table_row.locator("td").nth(1)).to_have_text("signups_new")
    expect(table_row.locator("td").nth(2)).to_have_text(table)
    for screen in SCREENS:
        page.set_viewport_size({"width": screen.width, "height": screen.height})
        check_page(page, screen, "wizard-edit-08-review-diff", tables=True)
    page.set_viewport_size({"width": LAPTOP.width, "height": LAPTOP.height})
    page.locator("#save").click()

    expect(page.locator("#pipeline-status")).to_have_text("Draft")
    shot(page, "edit-09-pipeline-v2")
    pipeline.refresh_from_db()
    assert pipeline.current_version.number == 2
    sink = pipeline.stored_spec["sink"]
    assert sink["table"] == table and sink["create_table"] is False
    assert {"field": "address.country", "column": "country", "type": "LowCardinality(String)"} in sink["columns"]
