"""The table step, an existing table without insert deduplication: the warning with the exact ALTER statement,
a button that applies it on the real ClickHouse, and Next blocked until it is applied or at-least-once is
accepted."""

from __future__ import annotations

import uuid

import clickhouse_connect
import pytest
from django.urls import reverse

from tests.webapp.wizard.test_wizard_steps import alerts, submit, walk_to_dedup

pytestmark = pytest.mark.django_db


@pytest.fixture
def bare_table(clickhouse_server):
    table = f"signups_{uuid.uuid4().hex[:6]}"
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    try:
        client.command(
            f"CREATE TABLE default.{table} (event_id UUID, plan String) ENGINE = MergeTree ORDER BY event_id"
        )
        yield table
    finally:
        client.command(f"DROP TABLE IF EXISTS default.{table}")
        client.close()


def at_clickhouse_step(client, kafka_connection, clickhouse_connection, topic):
    draft = walk_to_dedup(client, kafka_connection, topic)
    submit(client, draft, "dedup", {"enabled": "off"})
    submit(client, draft, "transform", {"filter": ""})
    submit(client, draft, "clickhouse", {"source": "saved", "connection": clickhouse_connection.pk}, action="connect")
    return draft


def test_an_existing_table_without_insert_dedup_is_flagged_and_fixed_with_one_click(
    owner_client, kafka_connection, clickhouse_connection, clickhouse_server, users_topic, bare_table
):
    draft = at_clickhouse_step(owner_client, kafka_connection, clickhouse_connection, users_topic)
    alter = f"ALTER TABLE `default`.`{bare_table}` MODIFY SETTING non_replicated_deduplication_window = 1000"
    where = {"database": "default", "table": bare_table}

    columns = owner_client.get(reverse("wizard:clickhouse_columns", kwargs={"draft_id": draft.pk}), where)
    assert reverse("wizard:exactly_once", kwargs={"draft_id": draft.pk}) in columns.content.decode()
    panel = owner_client.get(reverse("wizard:exactly_once", kwargs={"draft_id": draft.pk}), where)
    html = panel.content.decode()
    assert 'id="table-dedup-warning"' in html and "at-least-once" in html
    assert alter in html
    assert 'name="accept_at_least_once"' in html

    step = {"database": "default", "table_mode": "existing", "table": bare_table}
    response = submit(owner_client, draft, "clickhouse", step)
    assert response.status_code == 422
    assert any("would be at-least-once" in a for a in alerts(response)), alerts(response)
    draft.refresh_from_db()
    assert draft.step == "clickhouse"

    applied = owner_client.post(reverse("wizard:exactly_once_apply", kwargs={"draft_id": draft.pk}), where)
    assert 'id="table-dedup-ok"' in applied.content.decode()
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    try:
        full = client.query(
            f"SELECT engine_full FROM system.tables WHERE database = 'default' AND name = '{bare_table}'"
        )
        assert "non_replicated_deduplication_window = 1000" in full.result_rows[0][0]
    finally:
        client.close()

    response = submit(owner_client, draft, "clickhouse", step)
    assert response.status_code == 302, alerts(response)


def test_at_least_once_can_be_accepted(owner_client, kafka_connection, clickhouse_connection, users_topic, bare_table):
    draft = at_clickhouse_step(owner_client, kafka_connection, clickhouse_connection, users_topic)
    step = {"database": "default", "table_mode": "existing", "table": bare_table, "accept_at_least_once": "on"}
    response = submit(owner_client, draft, "clickhouse", step)
    assert response.status_code == 302, alerts(response)
