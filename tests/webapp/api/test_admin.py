"""The admin: connections with secrets masked, pipelines with status, versions and deploy/stop actions."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.webapp.conftest import orders_spec
from webapp.connections.models import ClickHouseConnection
from webapp.connections.services import clickhouse_connection_create
from webapp.pipelines import services
from webapp.pipelines.models import Pipeline
from webapp.workspaces.services import workspace_for_new_objects

SECRET = "admin-visible-never"


@pytest.fixture
def admin_client(client, db):
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123")
    client.force_login(admin)
    return client


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, topics, clickhouse_target):
    return services.pipeline_create(
        owner=owner,
        name="orders",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topics.orders, clickhouse_target.database),
    )


def test_connection_pages_never_show_secrets(admin_client, owner):
    ch = clickhouse_connection_create(owner=owner, data={"name": "c", "host": "ch", "password": SECRET})
    for url in ("/admin/connections/clickhouseconnection/", f"/admin/connections/clickhouseconnection/{ch.pk}/change/"):
        response = admin_client.get(url)
        assert response.status_code == 200
        assert SECRET not in response.content.decode()
    assert admin_client.get("/admin/connections/kafkaconnection/").status_code == 200


def test_saving_without_a_new_secret_keeps_it(admin_client, owner):
    ch = clickhouse_connection_create(owner=owner, data={"name": "c", "host": "ch", "password": SECRET})
    form = {
        "owner": owner.pk,
        "workspace": ch.workspace_id,
        "name": "renamed",
        "host": "ch",
        "port": 8123,
        "username": "default",
        "password": "",
        "database": "default",
        "verify": "on",
        "ssl_ca_pem": "",
    }
    response = admin_client.post(f"/admin/connections/clickhouseconnection/{ch.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    ch = ClickHouseConnection.objects.get(pk=ch.pk)
    assert (ch.name, ch.password) == ("renamed", SECRET)

    admin_client.post(f"/admin/connections/clickhouseconnection/{ch.pk}/change/", {**form, "clear_password": "on"})
    assert ClickHouseConnection.objects.get(pk=ch.pk).password == ""


def test_pipeline_pages_and_actions(admin_client, pipeline):
    listing = admin_client.get("/admin/pipelines/pipeline/")
    assert listing.status_code == 200
    assert "orders" in listing.content.decode()
    page = admin_client.get(f"/admin/pipelines/pipeline/{pipeline.pk}/change/")
    assert page.status_code == 200
    assert "Draft" in page.content.decode()

    admin_client.post(
        "/admin/pipelines/pipeline/", {"action": "deploy_selected", "_selected_action": [pipeline.pk]}, follow=True
    )
    assert Pipeline.objects.get(pk=pipeline.pk).status == "deploy_requested"
    admin_client.post(
        "/admin/pipelines/pipeline/", {"action": "stop_selected", "_selected_action": [pipeline.pk]}, follow=True
    )
    assert Pipeline.objects.get(pk=pipeline.pk).status == "stopped"
    refused = admin_client.post(
        "/admin/pipelines/pipeline/", {"action": "stop_selected", "_selected_action": [pipeline.pk]}, follow=True
    )
    assert "cannot be stopped" in refused.content.decode()


def test_non_staff_user_cannot_use_the_admin(client, owner):
    client.force_login(owner)
    response = client.get("/admin/pipelines/pipeline/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_adding_a_connection_in_the_admin_encrypts_the_password(admin_client, owner):
    from tests.webapp.conftest import raw_column

    response = admin_client.post(
        "/admin/connections/kafkaconnection/add/",
        {
            "owner": owner.pk,
            "workspace": workspace_for_new_objects(user=owner).pk,
            "name": "from-admin",
            "bootstrap_servers": "broker:9092",
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_username": "alice",
            "sasl_password": SECRET,
            "ssl_ca_pem": "",
            "ssl_certificate_pem": "",
            "ssl_key_pem": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    from webapp.connections.models import KafkaConnection

    connection = KafkaConnection.objects.get(name="from-admin")
    assert connection.sasl_password == SECRET
    assert SECRET not in raw_column(KafkaConnection._meta.db_table, "sasl_password", connection.pk)
    page = admin_client.get(f"/admin/connections/kafkaconnection/{connection.pk}/change/")
    assert SECRET not in page.content.decode()


def test_the_admin_names_connections_as_the_product_does(admin_client):
    index = admin_client.get("/admin/").content.decode()
    assert "ClickHouse connections" in index
    assert "Kafka connections" in index
    assert "Click house" not in index
    add_page = admin_client.get("/admin/connections/clickhouseconnection/add/").content.decode()
    assert "Add ClickHouse connection" in add_page


def test_a_pipeline_with_a_join_shows_it_in_the_list_on_its_page_and_in_its_versions_spec(
    admin_client, owner, kafka_conn, ch_conn, topics, clickhouse_target
):
    from tests.webapp.api.test_join_api import join_body

    body = join_body(kafka_conn, ch_conn, topics, clickhouse_target, "payments")
    pipeline = services.pipeline_create(
        owner=owner, name="orders-paid", kafka_connection=kafka_conn, clickhouse_connection=ch_conn, spec=body["spec"]
    )
    reads = f"{topics.orders}, left join payments on order_id = order_id within 30m (ingestion time)"
    assert reads in admin_client.get("/admin/pipelines/pipeline/").content.decode()
    page = admin_client.get(f"/admin/pipelines/pipeline/{pipeline.pk}/change/").content.decode()
    assert reads in page
    assert "&quot;join&quot;: {" in page and "&quot;field&quot;: &quot;right.payment_id&quot;" in page
