"""Protobuf topics in the wizard, against the real schema registry and broker: the sample step decodes the events
with the .proto registered under their schema id and takes the fields and types from it."""

from __future__ import annotations

import re
import uuid

import pytest

from tests.spark_jobs.protobuf_events import framed, order_bytes, register_proto
from tests.webapp.conftest import produce_records
from tests.webapp.wizard.test_avro_wizard import fetch, registry_connection  # noqa: F401 (a fixture)
from tests.webapp.wizard.test_wizard_steps import alerts, sample_fields_post, step_url, submit, walk_to_sample
from webapp.wizard.steps.sample import inferred_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def protobuf_topic(kafka_bootstrap: str, schema_registry_url: str) -> str:
    """3 Protobuf orders (tests/spark_jobs/protobuf_events.py) in the Confluent wire format, then bytes that do
    not parse as the message."""
    topic = f"proto_orders_{uuid.uuid4().hex[:8]}"
    schema_id = register_proto(schema_registry_url, f"{topic}-value")
    values = [framed(schema_id, order_bytes(f"o{i}", i + 1, tags=("gift",))) for i in range(3)]
    produce_records(kafka_bootstrap, topic, [*values, framed(schema_id, b"\x0a\xff")])
    return topic


def test_the_sample_step_decodes_protobuf_with_the_registry_and_takes_the_fields_from_the_schema(
    owner_client,
    kafka_connection,
    registry_connection,  # noqa: F811 (the fixture imported above)
    protobuf_topic,
):
    draft = walk_to_sample(owner_client, kafka_connection, protobuf_topic)
    page = owner_client.get(step_url(draft, "sample")).content.decode()
    assert 'value="protobuf"' in page

    html = fetch(owner_client, draft, format="protobuf").content.decode()
    assert "Protobuf events need the schema registry" in html

    html = fetch(owner_client, draft, format="protobuf", schema_registry=registry_connection.pk).content.decode()
    assert html.count('class="sample"') == 4
    assert "c-o1" in html and "2026-01-01T12:00:00Z" in html
    assert re.search(r'id="schema-versions">Decoded with <code>proto_orders_\w+-value</code> version 1', html)
    assert 'id="undecodable">1 event could not be decoded' in html
    rows = dict(re.findall(r'name="f(\d+)-path" value="([^"]+)"', html))
    assert list(rows.values()) == ["event_id", "qty", "customer.name", "paid_at", "status", "tags"]

    draft.refresh_from_db()
    events = draft.data["sample"]["events"]
    assert events[0]["value"]["status"] == "PAID" and events[3]["decode_error"]
    assert draft.data["sample"]["column_types"]["paid_at"] == "Nullable(DateTime64(6, 'UTC'))"
    post = {"count": 20, "position": "oldest", "format": "protobuf", "schema_registry": registry_connection.pk}
    fields = inferred_rows([e["value"] for e in events if not e["decode_error"]], [])
    response = submit(owner_client, draft, "sample", {**post, **sample_fields_post(fields)})
    assert response.status_code == 302, alerts(response)
    draft.refresh_from_db()
    assert draft.data["spec"]["source"]["format"] == "protobuf"
    assert draft.data["schema-registry"]["connection_id"] == registry_connection.pk
