"""Avro topics in the wizard, against the real schema registry, broker and ClickHouse: a schema registry is added
and tested on the connections page, the sample step decodes the events with the registered schemas and takes the
fields from the schema, and the walk ends in a pipeline that reads Avro through that registry."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from localstack.processes import free_port
from tests.webapp.heavy import page_answered
from tests.webapp.wizard.test_wizard_steps import (
    alerts,
    mapping_post,
    sample_fields_post,
    step_url,
    submit,
    walk_to_sample,
)
from webapp.connections import selectors
from webapp.connections.models import SchemaRegistryConnection
from webapp.connections.services import schema_registry_connection_create
from webapp.pipelines.models import Pipeline

pytestmark = pytest.mark.django_db

SECRET = "registry-pw-never-shown"


@pytest.fixture
def registry_connection(owner, schema_registry_url):
    return schema_registry_connection_create(owner=owner, data={"name": "apicurio", "url": schema_registry_url})


def new_registry_url() -> str:
    return reverse("connections:new", kwargs={"kind": "schema-registry"})


def test_a_schema_registry_is_added_tested_and_listed_on_the_connections_page(
    owner_client, schema_registry_url, avro_topic
):
    form = {"name": "apicurio", "url": schema_registry_url, "verify": "on", "username": "", "password": ""}
    response = owner_client.post(new_registry_url(), {**form, "next": "/connections/"})
    assert response.status_code == 302, alerts(response)
    connection = SchemaRegistryConnection.objects.get(name="apicurio")
    html = owner_client.get(reverse("connections:list")).content.decode()
    assert 'id="schema-registry-connections"' in html and schema_registry_url in html

    test_url = reverse("connections:test", kwargs={"kind": "schema-registry", "pk": connection.pk})
    html = owner_client.post(test_url).content.decode()
    assert 'id="connection-ok"' in html and "subject" in html, html

    html = owner_client.get(
        reverse("connections:edit", kwargs={"kind": "schema-registry", "pk": connection.pk})
    ).content.decode()
    assert schema_registry_url in html


def test_an_unreachable_registry_is_not_saved_unless_asked_and_its_password_never_shown(owner_client):
    url = f"http://127.0.0.1:{free_port()}/apis/ccompat/v7"
    form = {"name": "down", "url": url, "verify": "on", "username": "alice", "password": SECRET}
    response = owner_client.post(new_registry_url(), form)
    assert response.status_code == 200
    html = response.content.decode()
    assert "could not reach the schema registry" in html.lower()
    assert 'id="save-anyway"' in html and SECRET not in html
    assert not SchemaRegistryConnection.objects.exists()
    response = owner_client.post(new_registry_url(), {**form, "action": "save_anyway"})
    assert response.status_code == 302
    saved = SchemaRegistryConnection.objects.get(name="down")
    assert saved.password == SECRET
    assert SECRET not in owner_client.get(reverse("connections:list")).content.decode()


def fetch(client, draft, **extra):
    return page_answered(
        client,
        client.post(
            reverse("wizard:sample_fetch", kwargs={"draft_id": draft.pk}), {"count": 20, "position": "oldest", **extra}
        ),
    )


def test_the_sample_step_decodes_avro_with_the_registry_and_takes_the_fields_from_the_schema(
    owner_client, kafka_connection, registry_connection, avro_topic
):
    draft = walk_to_sample(owner_client, kafka_connection, avro_topic)
    page = owner_client.get(step_url(draft, "sample")).content.decode()
    assert 'value="avro"' in page and "apicurio" in page

    # Read as JSON, the events are not: the page says what they look like.
    html = fetch(owner_client, draft, format="json").content.decode()
    assert 'id="avro-hint"' in html and "look like Avro or Protobuf in the Confluent wire format" in html

    # Avro without a registry: the field says what is missing.
    html = fetch(owner_client, draft, format="avro").content.decode()
    assert "need the schema registry" in html

    html = fetch(owner_client, draft, format="avro", schema_registry=registry_connection.pk).content.decode()
    assert html.count('class="sample"') == 6
    assert "Customer 0" in html and "&quot;price&quot;: &quot;12.50&quot;" in html
    assert re.search(
        r'id="schema-versions">Decoded with <code>avro_orders_\w+-value</code> version 1 \(3 events\)', html
    )
    assert "version 2 (2 events)" in html
    assert 'id="undecodable">1 event could not be decoded' in html
    for path in ("order_id", "price", "paid_at", "status", "tags", "note", "customer.id", "coupon"):
        assert f'value="{path}"' in html, path
    rows = dict(re.findall(r'name="f(\d+)-path" value="([^"]+)"', html))
    assert list(rows.values())[-1] == "coupon"  # the newest version the sample used gives the fields

    # Next: the draft's spec reads Avro, and the registry is the draft's.
    from webapp.wizard.steps.sample import inferred_rows

    draft.refresh_from_db()
    events = draft.data["sample"]["events"]
    assert events[0]["schema_id"] is not None and events[5]["decode_error"]
    post = {"count": 20, "position": "oldest", "format": "avro", "schema_registry": registry_connection.pk}
    fields = inferred_rows([e["value"] for e in events if not e["decode_error"]], [])
    response = submit(owner_client, draft, "sample", {**post, **sample_fields_post(fields)})
    assert response.status_code == 302, alerts(response)
    draft.refresh_from_db()
    assert draft.data["spec"]["source"]["format"] == "avro"
    assert draft.data["schema-registry"]["connection_id"] == registry_connection.pk


def test_the_walk_ends_in_a_pipeline_that_reads_avro_through_the_registry(
    owner_client, owner, kafka_connection, clickhouse_connection, registry_connection, avro_topic
):
    draft = walk_to_sample(owner_client, kafka_connection, avro_topic)
    fetch(owner_client, draft, format="avro", schema_registry=registry_connection.pk)
    draft.refresh_from_db()

    sample = selectors.avro_event_sample(
        connection=kafka_connection,
        schema_registry_connection=registry_connection,
        topics=[avro_topic],
        count=20,
        position="oldest",
    )
    fields = selectors.schema_infer(values=sample.decoded_values, avro_schema=sample.schema)
    rows = [{"path": f.path, "type": f.type, "nullable": f.nullable} for f in fields]
    post = {"count": 20, "position": "oldest", "format": "avro", "schema_registry": registry_connection.pk}
    response = submit(owner_client, draft, "sample", {**post, **sample_fields_post(rows)})
    assert response.status_code == 302, alerts(response)
    response = submit(
        owner_client, draft, "dedup", {"enabled": "on", "keys": ["order_id"], "window": "1h", "time_basis": "ingestion"}
    )
    assert response.status_code == 302, alerts(response)
    response = submit(owner_client, draft, "transform", {"filter": ""})
    assert response.status_code == 302, alerts(response)
    response = submit(
        owner_client,
        draft,
        "clickhouse",
        {"phase": "connect", "source": "saved", "connection": clickhouse_connection.pk},
        action="connect",
    )
    assert response.status_code == 200
    response = submit(
        owner_client,
        draft,
        "clickhouse",
        {
            "database": "default",
            "table_mode": "new",
            "new_table": f"avro_{avro_topic[-8:]}",
            "engine": "ReplacingMergeTree",
            "order_by": ["order_id"],
        },
    )
    assert response.status_code == 302, alerts(response)
    # A new table: its columns take the types the Avro schema gives (Nullable for a union with null).
    page = owner_client.get(step_url(draft, "mapping")).content.decode()
    for column_type in ("Decimal(10, 2)", "DateTime64(3, &#x27;UTC&#x27;)", "Date", "LowCardinality(String)"):
        assert f'<option value="{column_type}" selected>' in page, column_type
    response = submit(owner_client, draft, "mapping", mapping_post(owner_client, draft))
    assert response.status_code == 302, alerts(response)
    html = owner_client.get(step_url(draft, "review")).content.decode()
    assert "Fix these before deploying" not in html, alerts(owner_client.get(step_url(draft, "review")))
    assert "&quot;format&quot;: &quot;avro&quot;" in html
    response = submit(owner_client, draft, "review", {"name": "avro-orders", "starting_offsets": "earliest"}, "save")
    assert response.status_code == 302, alerts(response)
    pipeline = Pipeline.objects.get(owner=owner, name="avro-orders")
    assert pipeline.schema_registry_connection_id == registry_connection.pk
    assert pipeline.stored_spec["source"]["format"] == "avro"
    assert pipeline.stored_spec["source"]["schema_registry"]["url"] == registry_connection.url
    assert "coupon" in [f["path"] for f in pipeline.stored_spec["source"]["fields"]]
    columns = {c["field"]: c["type"] for c in pipeline.stored_spec["sink"]["columns"]}
    assert {path: columns[path] for path in ("order_id", "price", "paid_at", "day", "status", "note", "coupon")} == {
        "order_id": "UUID",
        "price": "Decimal(10, 2)",
        "paid_at": "DateTime64(3, 'UTC')",
        "day": "Date",
        "status": "LowCardinality(String)",
        "note": "Nullable(String)",
        "coupon": "Nullable(String)",
    }

    # Editing through the wizard keeps the format and the registry.
    owner_client.get(reverse("wizard:wizard_edit", kwargs={"pk": pipeline.pk}))
    page = owner_client.get(step_url(pipeline.wizard_drafts.get(), "sample")).content.decode()
    assert re.search(r'value="avro"[^>]*checked', page)
    assert re.search(rf'<option value="{registry_connection.pk}" selected>', page)
