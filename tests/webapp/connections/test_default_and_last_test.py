"""A default connection per kind and each connection's last test, as the API, the connections page and the
wizard's first step show them, against the real broker."""

from __future__ import annotations

import pytest
from django.urls import reverse

from localstack.processes import free_port
from webapp.connections.models import KafkaConnection
from webapp.connections.services import kafka_connection_create

pytestmark = pytest.mark.django_db

KAFKA = "/api/v1/connections/kafka/"


@pytest.fixture
def dead_kafka(owner):
    return kafka_connection_create(owner=owner, data={"name": "gone", "bootstrap_servers": f"127.0.0.1:{free_port()}"})


def test_a_test_is_kept_on_the_connection_with_its_words(api, kafka_conn, dead_kafka):
    listed = {c["name"]: c for c in api.get(KAFKA).json()}
    assert listed["local kafka"]["last_tested_at"] is None and listed["local kafka"]["last_test_ok"] is None
    edited_at = listed["local kafka"]["updated_at"]

    assert api.post(f"{KAFKA}{kafka_conn.pk}/test/").status_code == 200
    refused = api.post(f"{KAFKA}{dead_kafka.pk}/test/")
    assert refused.status_code == 502

    answered = api.get(f"{KAFKA}{kafka_conn.pk}/").json()
    assert answered["last_test_ok"] is True and answered["last_tested_at"] is not None
    assert answered["last_test_message"] == ""
    assert answered["updated_at"] == edited_at  # a test is not an edit
    failed = api.get(f"{KAFKA}{dead_kafka.pk}/").json()
    assert failed["last_test_ok"] is False
    assert failed["last_test_message"] == refused.json()["message"]
    assert "connection refused" in failed["last_test_message"]


def test_testing_settings_before_saving_them_changes_no_connection(api, kafka_conn, kafka_bootstrap):
    assert (
        api.post(
            f"{KAFKA}test/", {"name": "local kafka", "bootstrap_servers": kafka_bootstrap}, format="json"
        ).status_code
        == 200
    )
    assert KafkaConnection.objects.get(pk=kafka_conn.pk).last_tested_at is None


def test_one_default_per_kind_and_workspace(api, other_api, kafka_conn, dead_kafka):
    first = api.post(f"{KAFKA}{dead_kafka.pk}/default/")
    assert first.status_code == 200 and first.json()["is_default"] is True
    second = api.post(f"{KAFKA}{kafka_conn.pk}/default/")
    assert second.status_code == 200 and second.json()["is_default"] is True
    defaults = {c["name"]: c["is_default"] for c in api.get(KAFKA).json()}
    assert defaults == {"gone": False, "local kafka": True}
    assert other_api.post(f"{KAFKA}{kafka_conn.pk}/default/").status_code == 404  # not their workspace
    entries = api.get("/api/v1/activity/").json()
    entries = entries["results"] if isinstance(entries, dict) else entries
    assert any(e["action"] == "connection.edit" and e["object_name"] == "local kafka" for e in entries)


def test_the_page_marks_the_default_and_says_when_each_was_tested(owner_client, kafka_conn, dead_kafka):
    owner_client.post(reverse("connections:test", kwargs={"kind": "kafka", "pk": dead_kafka.pk}))
    tested = owner_client.post(reverse("connections:test", kwargs={"kind": "kafka", "pk": kafka_conn.pk}))
    # The test's answer also replaces the row's "Last tested" cell, out of band.
    assert f'id="last-test-kafka-{kafka_conn.pk}" hx-swap-oob="true"' in tested.content.decode()

    made = owner_client.post(reverse("connections:make_default", kwargs={"kind": "kafka", "pk": dead_kafka.pk}))
    assert made.status_code == 302
    html = owner_client.get(reverse("connections:list")).content.decode()
    assert "<title>Connections · ClearFlow</title>" in html
    row_of_gone = html[html.index("<strong>gone</strong>") :][:1500]
    assert "default</span>" in row_of_gone and "failed</span>" in row_of_gone and "connection refused" in row_of_gone
    row_of_local = html[html.index("<strong>local kafka</strong>") :][:1500]
    assert "answered</span>" in row_of_local and "Make default" in row_of_local
    assert "default</span>" not in row_of_local.split("Make default")[0]


def test_the_wizard_preselects_the_default_among_several(owner_client, kafka_conn, dead_kafka):
    response = owner_client.get(reverse("wizard:wizard_new"))
    kafka_step = owner_client.get(response.url).content.decode()
    options = kafka_step.split('name="connection"')[1].split("</select>")[0]
    assert f'value="{kafka_conn.pk}" selected' not in options and f'value="{dead_kafka.pk}" selected' not in options

    KafkaConnection.objects.filter(pk=kafka_conn.pk).update(is_default=True)
    kafka_step = owner_client.get(response.url).content.decode()
    options = kafka_step.split('name="connection"')[1].split("</select>")[0]
    assert f'<option value="{kafka_conn.pk}" selected>' in options
    assert options.index(f'value="{kafka_conn.pk}"') < options.index(f'value="{dead_kafka.pk}"')  # offered first
