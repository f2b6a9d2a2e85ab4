"""POST /api/v1/pipelines/mapping/ for a table that does not exist yet proposes its columns, as the wizard's
"a new table" does (create-table path); an existing table is matched; a missing database is a 404."""

from __future__ import annotations

from tests.webapp.heavy import answered

FIELDS = [
    {"path": "order_id", "type": "uuid"},
    {"path": "customer.name", "type": "string", "nullable": True},
    {"path": "amount", "type": "float"},
    {"path": "created_at", "type": "datetime"},
]


def test_a_table_to_create_gets_the_columns_proposed_for_a_new_table(api, ch_conn, clickhouse_target):
    response = api.post(
        "/api/v1/pipelines/mapping/",
        {
            "fields": FIELDS,
            "clickhouse_connection": ch_conn.pk,
            "database": clickhouse_target.database,
            "table": "orders_clean",  # not in the database yet
            "order_by": ["order_id"],
        },
        format="json",
    )

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["create_table"] is True
    assert [(c["field"], c["column"], c["type"], c["compatible"]) for c in body["columns"]] == [
        ("order_id", "order_id", "UUID", True),
        ("customer.name", "customer_name", "Nullable(String)", True),
        ("amount", "amount", "Float64", True),
        ("created_at", "created_at", "DateTime64(3, 'UTC')", True),
    ]
    assert body["unmapped_required"] == [] and body["unmapped_fields"] == []
    # The same proposal as without a table name (and as the wizard's new-table mapping, see test_edit_and_mapping).
    unnamed = api.post("/api/v1/pipelines/mapping/", {"fields": FIELDS, "order_by": ["order_id"]}, format="json")
    assert unnamed.json()["columns"] == body["columns"] and unnamed.json()["create_table"] is True


def test_an_existing_table_is_matched_and_a_missing_database_is_named(api, ch_conn, clickhouse_target):
    existing = api.post(
        "/api/v1/pipelines/mapping/",
        {
            "fields": FIELDS,
            "clickhouse_connection": ch_conn.pk,
            "database": clickhouse_target.database,
            "table": "orders",
        },
        format="json",
    ).json()
    assert existing["create_table"] is False
    assert existing["unmapped_required"] == ["seq"]  # a column of the table: it was read, not proposed

    missing = api.post(
        "/api/v1/pipelines/mapping/",
        {"fields": FIELDS, "clickhouse_connection": ch_conn.pk, "database": "no_such_db", "table": "orders"},
        format="json",
    )
    assert missing.status_code == 404, missing.json()
    assert "The database no_such_db does not exist" in str(missing.json())


def test_a_new_table_takes_the_column_types_the_avro_schema_proposes(api, kafka_conn, avro_topic, schema_registry_url):
    """The fields as infer-schema gives them from the registry's schema go straight into the mapping: decimals,
    timestamps, dates, UUIDs and enums get their own column types, a union with null is Nullable, and the ORDER BY
    column is not."""
    registry = api.post(
        "/api/v1/connections/schema-registry/", {"name": "registry", "url": schema_registry_url}, format="json"
    ).json()
    inferred = answered(
        api,
        api.post(
            f"/api/v1/connections/kafka/{kafka_conn.pk}/infer-schema/",
            {"topics": [avro_topic], "position": "oldest", "schema_registry_connection": registry["id"]},
            format="json",
        ),
    ).json()["fields"]
    fields = [{k: f[k] for k in ("path", "type", "nullable", "clickhouse_type")} for f in inferred]

    response = api.post("/api/v1/pipelines/mapping/", {"fields": fields, "order_by": ["order_id"]}, format="json")
    assert response.status_code == 200, response.json()
    assert {c["field"]: c["type"] for c in response.json()["columns"]} == {
        "order_id": "UUID",
        "qty": "Int64",
        "price": "Decimal(10, 2)",
        "paid_at": "DateTime64(3, 'UTC')",
        "day": "Date",
        "status": "LowCardinality(String)",
        "tags": "Array(Nullable(String))",  # an array of strings
        "note": "Nullable(String)",
        "customer.id": "Int32",
        "customer.name": "String",
        "coupon": "Nullable(String)",
    }

    # Without the schema's types, the field types' defaults, as for JSON.
    plain = [{k: f[k] for k in ("path", "type", "nullable")} for f in inferred]
    columns = api.post("/api/v1/pipelines/mapping/", {"fields": plain}, format="json").json()["columns"]
    assert {c["field"]: c["type"] for c in columns}["price"] == "String"


def test_a_schema_column_type_that_the_field_cannot_fill_is_a_400_on_it(api):
    fields = [{"path": "price", "type": "float", "clickhouse_type": "UUID"}, {"path": "n", "type": "int"}]
    refused = api.post("/api/v1/pipelines/mapping/", {"fields": fields}, format="json")
    assert refused.status_code == 400
    assert refused.json()["errors"] == [
        {"path": "fields[0].clickhouse_type", "message": "a float field cannot be written to UUID"}
    ]
    fields[0]["clickhouse_type"] = "Decimal(99, 2)"
    refused = api.post("/api/v1/pipelines/mapping/", {"fields": fields}, format="json")
    assert refused.status_code == 400 and refused.json()["errors"][0]["path"] == "fields[0].clickhouse_type"
