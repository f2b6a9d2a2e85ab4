"""The wizard's steps on the server: validation next to fields, Back keeps data, drafts resume, and the
whole walk to a saved, deploy-requested pipeline against the real broker and ClickHouse."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse

from tests.webapp.heavy import page_answered
from tests.webapp.wizard.conftest import DUPLICATES, EVENT_COUNT, WITHOUT_KEY
from webapp.pipelines.models import Pipeline, PipelineStatus
from webapp.wizard.models import WizardDraft

pytestmark = pytest.mark.django_db


def alerts(response) -> list[str]:
    """The error messages a page shows (for assertion messages)."""
    html = response.content.decode()
    found = re.findall(r'role="alert"[^>]*>(.*?)</', html, flags=re.S)
    return [re.sub(r"\s+", " ", text).strip() for text in found]


def step_url(draft, step):
    return reverse("wizard:step", kwargs={"draft_id": draft.pk, "step": step})


def start(client):
    response = client.get(reverse("wizard:wizard_new"))
    assert response.status_code == 302
    return WizardDraft.objects.get(pipeline__isnull=True)


def submit(client, draft, step, data, action="next"):
    return client.post(step_url(draft, step), {**data, "action": action})


def fetch_sample(client, draft, count=20):
    return page_answered(
        client,
        client.post(
            reverse("wizard:sample_fetch", kwargs={"draft_id": draft.pk}), {"count": count, "position": "oldest"}
        ),
    )


def walk_to_sample(client, kafka_connection, topic):
    draft = start(client)
    response = submit(client, draft, "kafka", {"source": "saved", "connection": kafka_connection.pk})
    assert response.status_code == 302, alerts(response)
    response = submit(client, draft, "topics", {"topics": [topic]})
    assert response.status_code == 302, alerts(response)
    draft.refresh_from_db()
    assert draft.step == "sample"
    return draft


# -- step 1 --------------------------------------------------------------------------------------------


def test_kafka_step_shows_errors_next_to_the_fields_and_saves_nothing(owner_client):
    draft = start(owner_client)
    response = submit(
        owner_client,
        draft,
        "kafka",
        {
            "source": "new",
            "new-name": "",
            "new-bootstrap_servers": "not a server",
            "new-security_protocol": "PLAINTEXT",
        },
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert 'id="field-new-name"' in html and "This field is required." in html
    assert "Enter host:port pairs" in html
    draft.refresh_from_db()
    assert draft.step == "kafka" and draft.reached == "kafka"
    response = owner_client.get(step_url(draft, "topics"))  # not reached yet: back to the step reached
    assert response.status_code == 302 and response.url == step_url(draft, "kafka")


def test_kafka_step_needs_a_saved_connection_when_saved_is_chosen(owner_client):
    draft = start(owner_client)
    response = submit(owner_client, draft, "kafka", {"source": "saved", "connection": ""})
    assert response.status_code == 422
    assert "Choose a saved connection, or enter a new one." in response.content.decode()


def test_kafka_new_connection_is_saved_encrypted_and_not_kept_in_the_draft(owner_client, kafka_bootstrap):
    from webapp.connections.models import KafkaConnection

    draft = start(owner_client)
    response = submit(
        owner_client,
        draft,
        "kafka",
        {
            "source": "new",
            "new-name": "prod",
            "new-bootstrap_servers": kafka_bootstrap,
            "new-security_protocol": "PLAINTEXT",
        },
    )
    assert response.status_code == 302
    connection = KafkaConnection.objects.get(name="prod")
    draft.refresh_from_db()
    assert draft.data["kafka"] == {"connection_id": connection.pk}
    assert draft.step == "topics"


def test_kafka_test_connection_reports_brokers_and_topics(owner_client, kafka_connection, kafka_bootstrap):
    draft = start(owner_client)
    url = reverse("wizard:kafka_test", kwargs={"draft_id": draft.pk})
    response = owner_client.post(url, {"source": "saved", "connection": kafka_connection.pk})
    html = response.content.decode()
    assert response.status_code == 200
    assert "Connected." in html and kafka_bootstrap in html and "topic" in html


def test_kafka_test_connection_reports_an_unreachable_broker_in_plain_words(owner_client):
    import time

    from localstack.processes import free_port

    draft = start(owner_client)
    url = reverse("wizard:kafka_test", kwargs={"draft_id": draft.pk})
    started = time.monotonic()
    response = owner_client.post(
        url,
        {
            "source": "new",
            "new-name": "x",
            "new-bootstrap_servers": f"127.0.0.1:{free_port()}",
            "new-security_protocol": "PLAINTEXT",
        },
    )
    assert time.monotonic() - started < 15
    html = response.content.decode()
    assert "Connection failed." in html
    assert "127.0.0.1" in html


# -- steps 2 and 3 -------------------------------------------------------------------------------------


def test_topic_list_is_searchable_and_shows_partitions_and_counts(
    owner_client, kafka_connection, users_topic, empty_topic
):
    draft = start(owner_client)
    submit(owner_client, draft, "kafka", {"source": "saved", "connection": kafka_connection.pk})
    url = reverse("wizard:topic_list", kwargs={"draft_id": draft.pk})
    html = owner_client.get(url).content.decode()
    assert users_topic in html and empty_topic in html
    assert f"≈ {EVENT_COUNT}" in html
    html = owner_client.get(url, {"q": users_topic[-6:], "loaded": "1"}).content.decode()
    assert users_topic in html and empty_topic not in html
    # A chosen topic stays listed (and checked) whatever the search says.
    html = owner_client.get(url, {"q": "zzz-nothing", "topics": [empty_topic], "loaded": "1"}).content.decode()
    assert empty_topic in html and "checked" in html


def test_topics_step_requires_a_topic_that_exists(owner_client, kafka_connection):
    draft = start(owner_client)
    submit(owner_client, draft, "kafka", {"source": "saved", "connection": kafka_connection.pk})
    response = submit(owner_client, draft, "topics", {})
    assert response.status_code == 422
    assert "Choose at least one topic, or give a pattern that matches the topics to read." in response.content.decode()
    response = submit(owner_client, draft, "topics", {"topics": ["no-such-topic"]})
    assert response.status_code == 422 and "No such topic on this cluster: no-such-topic." in response.content.decode()


def test_sample_fetch_shows_events_and_infers_the_schema(owner_client, kafka_connection, users_topic):
    draft = walk_to_sample(owner_client, kafka_connection, users_topic)
    response = fetch_sample(owner_client, draft)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.count('class="sample"') == EVENT_COUNT
    assert "&quot;email&quot;: &quot;user0@example.com&quot;" in html  # pretty-printed JSON, escaped
    draft.refresh_from_db()
    assert len(draft.data["sample"]["events"]) == EVENT_COUNT
    assert 'value="address.city"' in html
    assert '<option value="uuid" selected>' in html
    assert '<option value="datetime" selected>' in html


def test_sample_step_validates_field_rows(owner_client, kafka_connection, users_topic):
    draft = walk_to_sample(owner_client, kafka_connection, users_topic)
    response = submit(
        owner_client,
        draft,
        "sample",
        {
            "count": 20,
            "position": "newest",
            "f0-path": "ok_field",
            "f0-type": "string",
            "f0-manual": "1",
            "f1-path": "bad path!",
            "f1-type": "string",
            "f1-manual": "1",
            "f2-path": "ok_field",
            "f2-type": "int",
            "f2-manual": "1",
        },
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "invalid field path" in html
    assert "is listed twice" in html
    response = submit(owner_client, draft, "sample", {"count": 20, "position": "newest"})
    assert "Add at least one field" in response.content.decode()


def test_an_empty_topic_is_usable_with_fields_added_by_hand(owner_client, kafka_connection, empty_topic):
    draft = walk_to_sample(owner_client, kafka_connection, empty_topic)
    response = fetch_sample(owner_client, draft)
    assert "The topic has no events yet" in response.content.decode()
    response = submit(
        owner_client,
        draft,
        "sample",
        {"count": 20, "position": "newest", "f7-path": "order.id", "f7-type": "string", "f7-manual": "1"},
    )
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.data["spec"]["source"]["fields"] == [{"path": "order.id", "type": "string"}]
    assert draft.step == "dedup"


# -- step 4 --------------------------------------------------------------------------------------------


def sample_fields_post(fields):
    rows = {}
    for i, f in enumerate(fields):
        rows[f"f{i}-path"] = f["path"]
        rows[f"f{i}-type"] = f["type"]
        rows[f"f{i}-manual"] = "0"
        if f["nullable"]:
            rows[f"f{i}-nullable"] = "on"
    return rows


def walk_to_dedup(client, kafka_connection, topic):
    draft = walk_to_sample(client, kafka_connection, topic)
    fetch_sample(client, draft)
    draft.refresh_from_db()
    # What the fetch inferred is what the page shows; post it back as the form would.
    from webapp.wizard.steps.sample import inferred_rows

    fields = inferred_rows([e["value"] for e in draft.data["sample"]["events"]], [])
    response = submit(client, draft, "sample", {"count": 20, "position": "oldest", **sample_fields_post(fields)})
    assert response.status_code == 302, alerts(response)
    draft.refresh_from_db()
    return draft


def test_dedup_analysis_measures_the_topic_and_recommends_a_window(owner_client, kafka_connection, users_topic):
    draft = walk_to_dedup(owner_client, kafka_connection, users_topic)
    url = reverse("wizard:key_advice", kwargs={"draft_id": draft.pk})
    html = page_answered(owner_client, owner_client.post(url, {"enabled": "on", "keys": ["event_id"]})).content.decode()
    assert f'<b id="scanned-count">{EVENT_COUNT}</b>' in html  # the whole topic, not a sample
    assert f'<b id="dup-count">{DUPLICATES}</b>' in html
    assert f'<b id="missing-count">{WITHOUT_KEY}</b>' in html
    # The copies were produced right after their originals: a minute covers them, though these few
    # events span too little time to be sure.
    assert 'data-recommended-window="1m"' in html
    assert '<b id="recommended-window">at least 1m</b>' in html
    assert 'id="key-candidates"' in html and "<code>event_id</code>" in html
    html = page_answered(owner_client, owner_client.post(url, {"enabled": "on", "keys": ["plan"]})).content.decode()
    assert f'<b id="dup-count">{EVENT_COUNT - 3}</b>' in html  # three plans, 20 events
    html = page_answered(owner_client, owner_client.post(url, {"enabled": "on", "keys": ["referrer"]})).content.decode()
    assert "missing from every one of the 20 events" in html
    html = page_answered(owner_client, owner_client.post(url, {"enabled": "off"})).content.decode()
    assert "Deduplication is off" in html


def test_dedup_analysis_of_an_empty_topic(owner_client, kafka_connection, empty_topic):
    draft = walk_to_sample(owner_client, kafka_connection, empty_topic)
    url = reverse("wizard:key_advice", kwargs={"draft_id": draft.pk})
    html = page_answered(owner_client, owner_client.post(url, {"enabled": "on", "keys": ["event_id"]})).content.decode()
    assert "The topics hold no events" in html


def test_dedup_step_errors_and_back_keeps_what_was_entered(owner_client, kafka_connection, users_topic):
    draft = walk_to_dedup(owner_client, kafka_connection, users_topic)
    response = submit(owner_client, draft, "dedup", {"enabled": "on", "window": "custom", "custom_window": "9w"})
    html = response.content.decode()
    assert response.status_code == 422
    assert "Choose at least one key field" in html
    response = submit(
        owner_client,
        draft,
        "dedup",
        {"enabled": "on", "keys": ["event_id"], "window": "custom", "custom_window": "8d", "time_basis": "ingestion"},
    )
    assert "longer than the maximum of 7d" in response.content.decode()
    # Back from a half-filled step, then forward again: the values are still there.
    response = submit(
        owner_client,
        draft,
        "dedup",
        {
            "enabled": "on",
            "keys": ["user_id"],
            "window": "custom",
            "custom_window": "90m",
            "time_basis": "event_time",
            "event_time_field": "created_at",
        },
        action="back",
    )
    assert response.status_code == 302 and response.url == step_url(draft, "sample")
    html = owner_client.get(step_url(draft, "dedup")).content.decode()
    assert 'value="user_id" id="id_keys_' in html and "checked" in html
    assert 'value="90m"' in html
    assert '<option value="created_at" selected>' in html


def test_the_draft_resumes_at_its_step(owner_client, kafka_connection, users_topic):
    draft = walk_to_sample(owner_client, kafka_connection, users_topic)
    response = owner_client.get(reverse("wizard:wizard_new"))
    assert response.status_code == 302 and response.url == step_url(draft, "sample")
    # An earlier step opens with what was saved in it.
    html = owner_client.get(step_url(draft, "kafka")).content.decode()
    assert f'<option value="{kafka_connection.pk}" selected>' in html
    html = owner_client.get(reverse("pipelines:list")).content.decode()
    assert "Continue where you left off" in html


# -- step 5 --------------------------------------------------------------------------------------------


def test_expressions_are_checked_with_their_position(owner_client, kafka_connection, users_topic):
    draft = walk_to_dedup(owner_client, kafka_connection, users_topic)
    submit(owner_client, draft, "dedup", {"enabled": "off"})
    response = submit(
        owner_client,
        draft,
        "transform",
        {
            "filter": "age >",
            "c0-name": "domain",
            "c0-expression": "split(email, '@')[1]",
            "c0-type": "string",
            "c1-name": "bad",
            "c1-expression": "no_such_field + 1",
            "c1-type": "int",
        },
    )
    html = response.content.decode()
    assert response.status_code == 422
    assert "syntax error at line 1" in html
    assert 'class="expr-error"' in html
    assert "unknown field &#x27;no_such_field&#x27;" in html
    url = reverse("wizard:transform_check", kwargs={"draft_id": draft.pk})
    html = owner_client.post(
        url, {"filter": "age > 30", "c0-name": "domain", "c0-expression": "split(email, '@')[1]", "c0-type": "string"}
    ).content.decode()
    assert "All expressions are valid." in html


# -- the whole walk, steps 6 to 8 -----------------------------------------------------------------------


def test_full_walk_creates_a_deploy_requested_pipeline_and_edit_makes_a_version(
    owner_client, owner, kafka_connection, clickhouse_connection, users_topic
):
    draft = walk_to_dedup(owner_client, kafka_connection, users_topic)
    response = submit(
        owner_client,
        draft,
        "dedup",
        {"enabled": "on", "keys": ["event_id"], "window": "1h", "time_basis": "ingestion"},
    )
    assert response.status_code == 302
    response = submit(
        owner_client,
        draft,
        "transform",
        {"filter": "", "c0-name": "email_domain", "c0-expression": "split(email, '@')[1]", "c0-type": "string"},
    )
    assert response.status_code == 302, alerts(response)
    response = submit(
        owner_client,
        draft,
        "clickhouse",
        {"phase": "connect", "source": "saved", "connection": clickhouse_connection.pk},
        action="connect",
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Change connection" in html
    # A table that exists must be picked as existing.
    response = submit(
        owner_client,
        draft,
        "clickhouse",
        {
            "database": "nope",
            "table_mode": "new",
            "new_table": "signups",
            "engine": "MergeTree",
            "order_by": ["event_id"],
        },
    )
    assert response.status_code == 422
    response = submit(
        owner_client,
        draft,
        "clickhouse",
        {
            "database": "default",
            "table_mode": "new",
            "new_table": "signups",
            "engine": "ReplacingMergeTree",
            "order_by": ["event_id"],
        },
    )
    assert response.status_code == 302, alerts(response)
    html = owner_client.get(step_url(draft, "mapping")).content.decode()
    assert re.search(r'name="m\d+-column" value="event_id"', html)
    assert "email_domain" in html and "_kafka_offset" in html
    response = submit(owner_client, draft, "mapping", mapping_post(owner_client, draft))
    assert response.status_code == 302, alerts(response)
    html = owner_client.get(step_url(draft, "review")).content.decode()
    assert "Fix these before deploying" not in html, html[:5000]
    assert f"{users_topic}-to-signups" in html
    assert "&quot;create_table&quot;: true" in html
    response = submit(
        owner_client, draft, "review", {"name": "my pipeline!", "starting_offsets": "earliest"}, action="deploy"
    )
    assert response.status_code == 422
    assert any("invalid pipeline name" in a for a in alerts(response))
    assert not Pipeline.objects.exists()
    response = submit(
        owner_client, draft, "review", {"name": "signups-pipeline", "starting_offsets": "earliest"}, action="deploy"
    )
    assert response.status_code == 302
    pipeline = Pipeline.objects.get(owner=owner, name="signups-pipeline")
    assert response.url == reverse("pipelines:detail", kwargs={"pk": pipeline.pk})
    assert pipeline.status == PipelineStatus.DEPLOY_REQUESTED
    assert pipeline.spec.dedup.keys == ["event_id"]
    assert pipeline.spec.sink.order_by == ["event_id"]
    assert not WizardDraft.objects.filter(pk=draft.pk).exists()
    html = owner_client.get(response.url).content.decode()
    assert "Deploying" in html and "signups-pipeline" in html
    assert owner_client.get(reverse("pipelines:list")).content.decode().count("signups-pipeline") == 1

    # Edit through the same steps: every step opens with the stored values; saving makes version 2.
    response = owner_client.get(reverse("wizard:wizard_edit", kwargs={"pk": pipeline.pk}))
    edit = WizardDraft.objects.get(pipeline=pipeline)
    assert response.url == step_url(edit, "kafka")
    html = owner_client.get(step_url(edit, "dedup")).content.decode()
    assert 'value="event_id"' in html
    response = submit(
        owner_client, edit, "dedup", {"enabled": "on", "keys": ["event_id"], "window": "6h", "time_basis": "ingestion"}
    )
    assert response.status_code == 302
    response = submit(
        owner_client, edit, "review", {"name": "signups-pipeline", "starting_offsets": "earliest"}, action="save"
    )
    assert response.status_code == 302, alerts(response)
    pipeline.refresh_from_db()
    assert pipeline.current_version.number == 2
    assert pipeline.spec.dedup.window == "6h"
    assert pipeline.versions.count() == 2


def mapping_post(client, draft):
    from webapp.wizard.steps.mapping import mapping_rows

    draft.refresh_from_db()
    rows, _, _ = mapping_rows(draft)
    data = {}
    for row in rows:
        data[f"m{row.index}-field"] = row.field
        data[f"m{row.index}-column"] = row.column
        data[f"m{row.index}-type"] = row.type
        if row.include:
            data[f"m{row.index}-include"] = "on"
    return data


def test_existing_table_columns_are_shown_and_the_mapping_flags_problems(
    owner_client, kafka_connection, clickhouse_connection, clickhouse_server, users_topic
):
    import clickhouse_connect

    table = f"signups_{uuid.uuid4().hex[:6]}"
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    try:
        client.command(
            f"CREATE TABLE default.{table} (event_id UUID, age UUID, plan String, tenant String, "
            "note Nullable(String), loaded_at DateTime DEFAULT now()) ENGINE = MergeTree ORDER BY event_id"
        )
    finally:
        client.close()
    draft = walk_to_dedup(owner_client, kafka_connection, users_topic)
    submit(owner_client, draft, "dedup", {"enabled": "off"})
    submit(owner_client, draft, "transform", {"filter": ""})
    submit(
        owner_client, draft, "clickhouse", {"source": "saved", "connection": clickhouse_connection.pk}, action="connect"
    )

    html = owner_client.get(
        reverse("wizard:clickhouse_tables", kwargs={"draft_id": draft.pk}), {"database": "default"}
    ).content.decode()
    assert f'<option value="{table}"' in html
    html = owner_client.get(
        reverse("wizard:clickhouse_columns", kwargs={"draft_id": draft.pk}), {"database": "default", "table": table}
    ).content.decode()
    assert "tenant" in html and "required" in html and "DEFAULT" in html

    response = submit(owner_client, draft, "clickhouse", {"database": "default", "table_mode": "existing"})
    assert response.status_code == 422 and "Choose a table." in alerts(response)
    response = submit(
        owner_client,
        draft,
        "clickhouse",
        # The table has no non_replicated_deduplication_window: the user accepts at-least-once (test_exactly_once_step).
        {"database": "default", "table_mode": "existing", "table": table, "accept_at_least_once": "on"},
    )
    assert response.status_code == 302, alerts(response)

    # Auto-mapped by name: event_id, age, plan. age (int) into UUID is incompatible; tenant needs a value.
    response = owner_client.get(step_url(draft, "mapping"))
    found = alerts(response)
    assert "A int field cannot be written to UUID." in found
    assert any("tenant" in a and "no field is mapped" in a for a in found)
    assert not any("loaded_at" in a or "note" in a for a in found)  # a default, or Nullable: fine unmapped
    response = submit(owner_client, draft, "mapping", mapping_post(owner_client, draft))
    assert response.status_code == 422
    draft.refresh_from_db()
    assert draft.reached == "mapping"  # the review step stays closed

    # Fix it: the age field is left out, user_id fills the UUID column `age`, email goes into tenant.
    data = mapping_post(owner_client, draft)
    for key, value in list(data.items()):
        if key.endswith("-field") and value == "age":
            data[key.replace("-field", "-column")] = ""
        if key.endswith("-field") and value == "user_id":
            data[key.replace("-field", "-column")] = "age"
        if key.endswith("-field") and value == "email":
            data[key.replace("-field", "-column")] = "tenant"
    response = submit(owner_client, draft, "mapping", data)
    assert response.status_code == 302, alerts(response)
    html = owner_client.get(step_url(draft, "review")).content.decode()
    assert "Fix these before deploying" not in html
    assert "&quot;create_table&quot;: false" in html


def test_secrets_typed_into_a_new_connection_are_never_sent_back_or_kept_in_the_draft(owner_client):
    draft = start(owner_client)
    secret = "s3cr3t-Pa55word"
    key = "-----BEGIN PRIVATE KEY-----\nMIIsecretkeymaterial\n-----END PRIVATE KEY-----"
    data = {
        "source": "new",
        "new-name": "sasl",
        "new-bootstrap_servers": "broker:9092",
        "new-security_protocol": "SASL_SSL",
        "new-sasl_mechanism": "",
        "new-sasl_username": "svc",
        "new-sasl_password": secret,
        "new-ssl_key_pem": key,
    }
    response = submit(owner_client, draft, "kafka", data)
    html = response.content.decode()
    assert response.status_code == 422
    assert "needs a SASL mechanism" in html
    assert secret not in html and "MIIsecretkeymaterial" not in html
    submit(owner_client, draft, "kafka", data, action="back")
    draft.refresh_from_db()
    assert secret not in str(draft.data) and "MIIsecretkeymaterial" not in str(draft.data)


def test_clickhouse_test_connection_reports_the_server_or_its_error(owner_client, clickhouse_server):
    from localstack.processes import free_port

    draft = start(owner_client)
    url = reverse("wizard:clickhouse_test", kwargs={"draft_id": draft.pk})
    fields = {
        "source": "new",
        "new-name": "ch",
        "new-host": clickhouse_server.host,
        "new-username": "default",
        "new-database": "default",
        "new-verify": "on",
    }
    html = owner_client.post(url, {**fields, "new-port": clickhouse_server.port}).content.decode()
    assert "Connected." in html and "ClickHouse 26." in html
    html = owner_client.post(url, {**fields, "new-port": free_port()}).content.decode()
    assert "Connection failed." in html and "connection refused" in html


# -- what was typed survives a reload -----------------------------------------------------------------------


def keep(client, draft, step, data):
    return client.post(reverse("wizard:keep_input", kwargs={"draft_id": draft.pk, "step": step}), data)


def test_input_kept_while_typing_is_shown_after_a_reload_without_its_secrets(owner_client):
    draft = start(owner_client)
    typed = {
        "source": "new",
        "new-name": "half-typed",
        "new-bootstrap_servers": "broker.internal:9093",
        "new-security_protocol": "SASL_SSL",
        "new-sasl_password": "typed-secret",
    }
    assert keep(owner_client, draft, "kafka", typed).status_code == 204

    html = owner_client.get(step_url(draft, "kafka")).content.decode()
    assert 'value="half-typed"' in html and 'value="broker.internal:9093"' in html
    draft.refresh_from_db()
    assert "typed-secret" not in str(draft.data)
    assert draft.step == "kafka" and draft.reached == "kafka"  # keeping does not move or unlock anything
    assert keep(owner_client, draft, "review", typed).status_code == 204  # a step not reached: ignored
    draft.refresh_from_db()
    assert "review" not in draft.data["_raw"]


def test_a_failed_next_keeps_what_was_typed_for_a_reload(owner_client):
    draft = start(owner_client)
    response = submit(
        owner_client, draft, "kafka", {"source": "new", "new-name": "", "new-bootstrap_servers": "only-a-host"}
    )
    assert response.status_code == 422
    html = owner_client.get(step_url(draft, "kafka")).content.decode()
    assert 'value="only-a-host"' in html
