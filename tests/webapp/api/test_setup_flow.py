"""The whole API flow an engineer automates: connections, topics, sample, infer, map, validate, create, deploy."""

from __future__ import annotations

import pytest

from tests.webapp.heavy import answered
from webapp.pipelines.models import Pipeline


def test_from_topic_to_deploy_requested(api, kafka_bootstrap, clickhouse_server, topics, clickhouse_target):
    kafka = api.post(
        "/api/v1/connections/kafka/", {"name": "k", "bootstrap_servers": kafka_bootstrap}, format="json"
    ).json()
    ch = api.post(
        "/api/v1/connections/clickhouse/",
        {"name": "c", "host": clickhouse_server.host, "port": clickhouse_server.port},
        format="json",
    ).json()
    names = [t["name"] for t in api.get(f"/api/v1/connections/kafka/{kafka['id']}/topics/").json()]
    assert topics.orders in names

    inferred = answered(
        api,
        api.post(f"/api/v1/connections/kafka/{kafka['id']}/infer-schema/", {"topics": [topics.orders]}, format="json"),
    ).json()
    fields = [{"path": f["path"], "type": f["type"], "nullable": f["nullable"]} for f in inferred["fields"]]

    # Into the existing table: matched by name, `customer.name` -> `customer_name`.
    mapping = api.post(
        "/api/v1/pipelines/mapping/",
        {
            "fields": fields,
            "clickhouse_connection": ch["id"],
            "database": clickhouse_target.database,
            "table": "orders",
        },
        format="json",
    )
    assert mapping.status_code == 200, mapping.json()
    suggestion = mapping.json()
    assert [(c["field"], c["column"], c["compatible"]) for c in suggestion["columns"]] == [
        ("order_id", "order_id", True),
        ("seq", "seq", True),
        ("amount", "amount", True),
        ("customer.name", "customer_name", True),
    ]
    assert suggestion["unmapped_required"] == []
    assert set(suggestion["unmapped_fields"]) == {"paid", "created_at", "customer.id", "tags"}

    # A new table gets every field with a default type.
    new_table = api.post("/api/v1/pipelines/mapping/", {"fields": fields}, format="json").json()
    assert {c["column"]: c["type"] for c in new_table["columns"]}["created_at"] == "DateTime64(3, 'UTC')"

    spec = {
        "source": {"topics": [topics.orders], "fields": [{"path": f["path"], "type": f["type"]} for f in fields]},
        "dedup": {"keys": ["order_id"], "window": "1h"},
        "sink": {
            "clickhouse": {"database": clickhouse_target.database},
            "table": "orders",
            "create_table": False,
            "columns": [{k: c[k] for k in ("field", "column", "type")} for c in suggestion["columns"]],
        },
    }
    body = {"name": "orders", "kafka_connection": kafka["id"], "clickhouse_connection": ch["id"], "spec": spec}
    checked = answered(api, api.post("/api/v1/pipelines/validate/", {**body, "check_live": True}, format="json"))
    assert checked.status_code == 200, checked.json()
    created = api.post("/api/v1/pipelines/", body, format="json")
    assert created.status_code == 201, created.json()
    deployed = api.post(f"/api/v1/pipelines/{created.json()['id']}/deploy/")
    assert deployed.json()["status"] == "deploy_requested"
    assert Pipeline.objects.get().status == "deploy_requested"


def test_mapping_flags_incompatible_types_and_required_columns(api, ch_conn, clickhouse_target):
    response = api.post(
        "/api/v1/pipelines/mapping/",
        {
            "fields": [{"path": "seq", "type": "datetime"}, {"path": "ORDER_ID", "type": "uuid", "nullable": True}],
            "clickhouse_connection": ch_conn.pk,
            "database": clickhouse_target.database,
            "table": "orders",
        },
        format="json",
    )
    assert response.status_code == 200
    by_column = {c["column"]: c for c in response.json()["columns"]}
    assert by_column["seq"]["compatible"] is False
    assert "cannot be written to Int64" in by_column["seq"]["problem"]
    assert by_column["order_id"]["compatible"] is True
    assert "not Nullable" in by_column["order_id"]["problem"]
    assert response.json()["unmapped_required"] == ["amount"]


def test_mapping_input_errors(api, other_api, ch_conn):
    missing = api.post("/api/v1/pipelines/mapping/", {"fields": [], "table": "t"}, format="json")
    assert missing.status_code == 400
    assert {e["path"] for e in missing.json()["errors"]} == {"fields"}
    no_connection = api.post(
        "/api/v1/pipelines/mapping/", {"fields": [{"path": "a", "type": "int"}], "table": "t"}, format="json"
    )
    assert no_connection.json()["errors"][0]["path"] == "clickhouse_connection"
    bad_type = api.post("/api/v1/pipelines/mapping/", {"fields": [{"path": "a", "type": "integer"}]}, format="json")
    assert bad_type.json()["errors"][0]["path"] == "fields[0].type"
    others = other_api.post(
        "/api/v1/pipelines/mapping/",
        {"fields": [{"path": "a", "type": "int"}], "clickhouse_connection": ch_conn.pk, "table": "t"},
        format="json",
    )
    assert others.status_code == 400
    assert others.json()["errors"][0]["path"] == "clickhouse_connection"


@pytest.fixture
def computed_table(clickhouse_server, clickhouse_target):
    """A table with MATERIALIZED and ALIAS columns beside `orders`, dropped afterwards (the database is shared)."""
    import clickhouse_connect

    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    name = f"`{clickhouse_target.database}`.computed"
    try:
        client.command(
            f"CREATE TABLE {name} (order_id UUID, seq Int64 MATERIALIZED 0, "
            "amount Float64 ALIAS 1.5) ENGINE = MergeTree ORDER BY order_id"
        )
        yield "computed"
    finally:
        client.command(f"DROP TABLE IF EXISTS {name}")
        client.close()


def test_computed_columns_are_never_mapped_and_validation_refuses_them(
    api, kafka_conn, ch_conn, clickhouse_target, topics, computed_table
):
    fields = [{"path": "order_id", "type": "uuid"}, {"path": "seq", "type": "int"}, {"path": "amount", "type": "float"}]
    suggestion = api.post(
        "/api/v1/pipelines/mapping/",
        {
            "fields": fields,
            "clickhouse_connection": ch_conn.pk,
            "database": clickhouse_target.database,
            "table": "computed",
        },
        format="json",
    ).json()
    assert [c["column"] for c in suggestion["columns"]] == ["order_id"]
    assert suggestion["unmapped_fields"] == ["seq", "amount"]

    spec = {
        "source": {"topics": [topics.orders], "fields": fields},
        "sink": {
            "clickhouse": {"database": clickhouse_target.database},
            "table": "computed",
            "create_table": False,
            "columns": [
                {"field": "order_id", "column": "order_id", "type": "UUID"},
                {"field": "seq", "column": "seq", "type": "Int64"},
                {"field": "amount", "column": "amount", "type": "Float64"},
            ],
        },
    }
    body = {"kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec, "check_live": True}
    checked = answered(api, api.post("/api/v1/pipelines/validate/", body, format="json"))
    assert checked.status_code == 400
    errors = {e["path"]: e["message"] for e in checked.json()["errors"]}
    assert "MATERIALIZED" in errors["spec.sink.columns[1].column"]
    assert "ALIAS" in errors["spec.sink.columns[2].column"]
