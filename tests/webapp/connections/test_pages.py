"""The connections page: secrets are never shown, only changed on purpose; test and delete; others' are 404."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.connections.services import clickhouse_connection_create
from webapp.wizard.models import WizardDraft

pytestmark = pytest.mark.django_db

SECRET = "ch-Pa55-never-shown"


@pytest.fixture
def ch_with_password(owner):
    return clickhouse_connection_create(
        owner=owner, data={"name": "warehouse", "host": "ch.internal", "port": 8443, "secure": True, "password": SECRET}
    )


def edit_url(kind, connection):
    return reverse("connections:edit", kwargs={"kind": kind, "pk": connection.pk})


def test_list_shows_connections_without_their_secrets(owner_client, ch_with_password, kafka_connection):
    html = owner_client.get(reverse("connections:list")).content.decode()
    assert "warehouse" in html and "password set" in html and kafka_connection.bootstrap_servers in html
    assert SECRET not in html
    html = owner_client.get(edit_url("clickhouse", ch_with_password)).content.decode()
    assert SECRET not in html and "Change" in html


def test_editing_keeps_the_secret_unless_changed(owner_client, ch_with_password):
    form = {
        "name": "warehouse-2",
        "host": "ch.internal",
        "port": 8443,
        "username": "default",
        "database": "default",
        "secure": "on",
        "verify": "on",
        "password": "ignored-unless-changed",
        "action": "save_anyway",  # ch.internal does not exist here: saved without the connection test
    }
    response = owner_client.post(edit_url("clickhouse", ch_with_password), form)
    assert response.status_code == 302, response.content.decode()[-3000:]
    saved = ClickHouseConnection.objects.get(pk=ch_with_password.pk)
    assert saved.name == "warehouse-2" and saved.password == SECRET
    response = owner_client.post(
        edit_url("clickhouse", ch_with_password), {**form, "change_password": "on", "password": "new-one"}
    )
    assert response.status_code == 302
    assert ClickHouseConnection.objects.get(pk=ch_with_password.pk).password == "new-one"


def test_edit_errors_are_shown_next_to_the_field_and_nothing_is_saved(owner_client, kafka_connection):
    response = owner_client.post(
        edit_url("kafka", kafka_connection),
        {"name": "x", "bootstrap_servers": "nope", "security_protocol": "PLAINTEXT"},
    )
    assert response.status_code == 200
    assert "Enter host:port pairs" in response.content.decode()
    assert KafkaConnection.objects.get(pk=kafka_connection.pk).name == "local"


def test_an_edit_that_breaks_the_connection_is_not_saved_unless_chosen(owner_client, kafka_connection):
    from localstack.processes import free_port

    refused = f"127.0.0.1:{free_port()}"  # nothing listens there
    form = {"name": "local", "bootstrap_servers": refused, "security_protocol": "PLAINTEXT"}
    response = owner_client.post(edit_url("kafka", kafka_connection), form)

    assert response.status_code == 200
    html = response.content.decode()
    field = html.split('id="field-bootstrap_servers"', 1)[1].split('<div class="field', 1)[0]
    assert f"Nothing accepts connections at {refused} (connection refused)" in field
    assert 'id="save-anyway"' in html
    assert KafkaConnection.objects.get(pk=kafka_connection.pk).bootstrap_servers != refused

    response = owner_client.post(edit_url("kafka", kafka_connection), {**form, "action": "save_anyway"})
    assert response.status_code == 302
    assert KafkaConnection.objects.get(pk=kafka_connection.pk).bootstrap_servers == refused


def test_test_and_delete(owner_client, kafka_connection):
    html = owner_client.post(
        reverse("connections:test", kwargs={"kind": "kafka", "pk": kafka_connection.pk})
    ).content.decode()
    assert "Connected." in html
    response = owner_client.post(reverse("connections:delete", kwargs={"kind": "kafka", "pk": kafka_connection.pk}))
    assert response.status_code == 302
    assert not KafkaConnection.objects.filter(pk=kafka_connection.pk).exists()


def test_other_users_connections_are_not_found(client, other, kafka_connection):
    client.force_login(other)
    for name in ("connections:edit", "connections:test", "connections:delete"):
        method = client.get if name == "connections:edit" else client.post
        response = method(reverse(name, kwargs={"kind": "kafka", "pk": kafka_connection.pk}))
        assert response.status_code == 404
    assert KafkaConnection.objects.filter(pk=kafka_connection.pk).exists()
    assert kafka_connection.name not in client.get(reverse("connections:list")).content.decode()


def test_anonymous_is_sent_to_log_in(client, kafka_connection):
    assert client.get(reverse("connections:list")).url.startswith("/login/")
    assert client.get(edit_url("kafka", kafka_connection)).url.startswith("/login/")


def test_a_connection_in_use_is_not_deleted(owner_client, kafka_connection, create_pipeline):
    create_pipeline("p")
    response = owner_client.post(
        reverse("connections:delete", kwargs={"kind": "kafka", "pk": kafka_connection.pk}), follow=True
    )
    assert "used by pipeline(s): p" in response.content.decode()
    assert KafkaConnection.objects.filter(pk=kafka_connection.pk).exists()


@pytest.fixture
def many_connections(owner):
    from webapp.connections.services import kafka_connection_create

    for name, servers in (("orders prod", "kafka-eu.internal:9092"), ("clicks", "kafka-us.internal:9092")):
        kafka_connection_create(owner=owner, data={"name": name, "bootstrap_servers": servers})
    for name, host in (("Orders warehouse", "ch-eu.internal"), ("archive", "ch-us.internal")):
        clickhouse_connection_create(owner=owner, data={"name": name, "host": host, "port": 8123})


def test_connections_are_found_by_name_or_address_on_the_page_and_in_the_api(owner_client, api, many_connections):
    def names(html: str, table: str) -> list[str]:
        found = re.search(rf'<table id="{table}">.*?</table>', html, flags=re.S)
        return re.findall(r"<td><strong>(.*?)</strong></td>", found.group(0)) if found else []

    html = owner_client.get(reverse("connections:list"), {"search": "ORDERS"}).content.decode()
    assert names(html, "kafka-connections") == ["orders prod"]
    assert names(html, "clickhouse-connections") == ["Orders warehouse"]
    assert "Connections whose name or address contains “ORDERS”." in html
    assert 'id="connection-search"' in html and 'value="ORDERS"' in html  # kept in the box as typed
    html = owner_client.get(reverse("connections:list"), {"search": "-us."}).content.decode()  # by the address
    assert (names(html, "kafka-connections"), names(html, "clickhouse-connections")) == (["clicks"], ["archive"])
    html = owner_client.get(reverse("connections:list"), {"search": "nothing like it"}).content.decode()
    assert "No Kafka connection matches “nothing like it”." in html

    listed = api.get("/api/v1/connections/kafka/", {"search": "eu.internal"})
    assert [c["name"] for c in listed.json()] == ["orders prod"]
    assert len(api.get("/api/v1/connections/clickhouse/", {"search": ""}).json()) == 2  # an empty search: all
    too_long = api.get("/api/v1/connections/kafka/", {"search": "x" * 101})
    assert too_long.status_code == 400 and too_long.json()["errors"][0]["path"] == "search"


def test_the_wizard_offers_the_most_used_connections_first(owner_client, owner, create_pipeline, kafka_connection):
    from webapp.connections.services import kafka_connection_create

    for name in ("a spare", "b spare"):
        kafka_connection_create(owner=owner, data={"name": name, "bootstrap_servers": "spare.internal:9092"})
    create_pipeline("uses-it")  # through `kafka_connection`, named after the others alphabetically
    owner_client.get(reverse("wizard:wizard_new"))
    draft = WizardDraft.objects.get(pipeline__isnull=True)
    html = owner_client.get(reverse("wizard:step", kwargs={"draft_id": draft.pk, "step": "kafka"})).content.decode()
    select = re.search(r'<select name="connection".*?</select>', html, flags=re.S).group(0)
    offered = re.findall(r'<option value="\d+"[^>]*>(.*?)</option>', select)
    assert offered[0] == str(kafka_connection) and sorted(offered[1:]) == offered[1:]
