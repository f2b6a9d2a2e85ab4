"""Schema evolution as a user lives it, with a real Celery worker, Spark job, schema registry, Kafka and ClickHouse:
an Avro (or Protobuf) pipeline runs, producers move to schema version 2 (a new field), the API and the pipeline page
say so, one click adds the column, and the rows carry the field from then on, each event written once."""

from __future__ import annotations

import uuid

import pytest

from tests.spark_jobs.protobuf_events import ORDER_PROTO, ORDER_PROTO_V2, framed, order_bytes, register_proto
from tests.specs import spec_dict
from tests.webapp.avro_events import ORDER_V1, ORDER_V2, avro_order, serialized
from tests.worker.helpers import JOB_TIMEOUT, URL, produce, wait_for, wait_status

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]

REGISTRY = "/api/v1/connections/schema-registry/"


def registry_spec(topic: str, table: str, *, format: str, key: str, key_type: tuple[str, str]) -> dict:
    """Orders in `format` through the registry, keyed by `key` (its field type and column type)."""
    return spec_dict(
        topics=[topic],
        format=format,
        starting_offsets="earliest",
        fields=[(key, key_type[0]), ("qty", "int"), ("customer.name", "string")],
        database="default",
        table=table,
        create_table=True,
        engine="MergeTree",
        columns=[(key, key, key_type[1]), ("qty", "qty", "Int64"), ("customer.name", "customer_name", "String")],
    )


def avro_spec(topic: str, table: str) -> dict:
    return registry_spec(topic, table, format="avro", key="order_id", key_type=("uuid", "UUID"))


def protobuf_spec(topic: str, table: str) -> dict:
    return registry_spec(topic, table, format="protobuf", key="event_id", key_type=("string", "String"))


def rows(ch, table: str, key: str = "order_id") -> tuple[int, int]:
    if not ch.command(f"EXISTS TABLE `{table}`"):
        return 0, 0
    total, distinct = ch.query(f"SELECT count(), uniqExact({key}) FROM `{table}`").result_rows[0]
    return int(total), int(distinct)


def coupon_count(ch, table: str, coupon: str) -> int:
    return int(ch.query(f"SELECT count() FROM `{table}` WHERE coupon = {{c:String}}", {"c": coupon}).result_rows[0][0])


@pytest.mark.timeout(1500)  # three job starts (deploy, redeploy) on the shared cores
def test_a_new_field_is_reported_added_as_a_column_in_one_click_and_no_event_is_lost_or_doubled(
    api, client, owner, kafka_conn, ch_conn, kafka_bootstrap, schema_registry_url, topic, ch, celery_worker
):
    table = f"evolve_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, [(i % 2, v) for i, v in enumerate(
        serialized(schema_registry_url, topic, ORDER_V1, [avro_order(i) for i in range(50)])
    )])  # fmt: skip
    registry = api.post(REGISTRY, {"name": "registry", "url": schema_registry_url}, format="json").json()
    created = api.post(
        URL,
        {
            "name": "evolving",
            "kafka_connection": kafka_conn.pk,
            "clickhouse_connection": ch_conn.pk,
            "schema_registry_connection": registry["id"],
            "spec": avro_spec(topic, table),
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    pk = created.json()["id"]
    celery_worker.start()
    assert api.post(f"{URL}{pk}/deploy/").json()["status"] == "deploy_requested"
    wait_status(api, pk, "running", worker=celery_worker)
    wait_for(lambda: rows(ch, table) == (50, 50), timeout=JOB_TIMEOUT)

    # Producers move to version 2 while the pipeline runs: the new field is reported, not dropped in silence.
    produce(kafka_bootstrap, topic, [(i % 2, v) for i, v in enumerate(
        serialized(schema_registry_url, topic, ORDER_V2, [avro_order(i, coupon="XMAS") for i in range(50, 80)])
    )])  # fmt: skip
    wait_for(lambda: rows(ch, table) == (80, 80), timeout=JOB_TIMEOUT)

    def coupon_reported() -> dict | None:
        changes = api.get(f"{URL}{pk}/schema-changes/").json()["changes"]
        return next((c for c in changes if c["path"] == "coupon" and c["events"] == 30), None)

    coupon = wait_for(coupon_reported, timeout=60)
    assert coupon["kind"] == "new" and coupon["column"] == "coupon" and coupon["column_type"] == "Nullable(String)"
    assert coupon["message"].startswith("new field `coupon` (string or null) seen in 30 events since ")
    assert coupon["rows_since"] == 30  # the rows already written from them, counted in ClickHouse

    client.force_login(owner)
    page = client.get(f"/pipelines/{pk}/schema-changes/").content.decode()
    assert "New field <code>coupon</code> (string or null) seen in 30 events" in page
    assert 'data-add-column="coupon"' in page
    assert "30 rows written since " in page and "hold no value for it: adding the column fills them" in page

    # One click: the column, a new version mapping it, the job continues from its checkpoint with it.
    answer = client.post(f"/pipelines/{pk}/schema-changes/add-column/", {"path": "coupon"}).content.decode()
    assert "Column `coupon` added for `coupon`; version 2 maps it." in answer, answer
    columns = dict(ch.query(f"SELECT name, type FROM system.columns WHERE table = '{table}'").result_rows)
    assert columns["coupon"] == "Nullable(String)"
    detail = api.get(f"{URL}{pk}/").json()
    assert detail["current_version"] == 2
    assert {"field": "coupon", "column": "coupon", "type": "Nullable(String)"} in detail["spec"]["sink"]["columns"]
    wait_for(
        lambda: (
            api.get(f"{URL}{pk}/status/").json()["deployed_version"] == 2
            and api.get(f"{URL}{pk}/status/").json()["status"] == "running"
        ),
        timeout=JOB_TIMEOUT,
    )

    # The 30 rows written before the column existed get their coupons from their events, read again from Kafka.
    filled = wait_for(lambda: api.get(f"{URL}{pk}/schema-changes/").json()["last_fill"] or None, timeout=JOB_TIMEOUT)
    assert filled.startswith("Column `coupon`: 30 rows written before it existed were filled from "), filled
    assert coupon_count(ch, table, "XMAS") == 30
    assert rows(ch, table) == (80, 80)  # filled in place: no row doubled

    produce(kafka_bootstrap, topic, [(i % 2, v) for i, v in enumerate(
        serialized(schema_registry_url, topic, ORDER_V2, [avro_order(i, coupon="NEWYEAR") for i in range(80, 100)])
    )])  # fmt: skip
    wait_for(lambda: rows(ch, table)[0] >= 100, timeout=JOB_TIMEOUT)
    assert rows(ch, table) == (100, 100)  # every event once, across the change
    assert coupon_count(ch, table, "NEWYEAR") == 20
    assert coupon_count(ch, table, "XMAS") == 30
    assert all(c["path"] != "coupon" for c in api.get(f"{URL}{pk}/schema-changes/").json()["changes"])
    card = client.get(f"/pipelines/{pk}/schema-changes/").content.decode()
    assert "30 rows written before it existed were filled" in card


@pytest.mark.timeout(1500)  # as above: three job starts on the shared cores
def test_a_new_protobuf_field_is_reported_added_as_a_column_in_one_click_and_no_event_is_lost_or_doubled(
    api, client, owner, kafka_conn, ch_conn, kafka_bootstrap, schema_registry_url, topic, ch, celery_worker
):
    """The Avro story above with Protobuf producers: `.proto` version 2 adds `string coupon = 7`."""
    table = f"evolve_pb_{uuid.uuid4().hex[:8]}"
    subject = f"{topic}-value"
    v1 = register_proto(schema_registry_url, subject, ORDER_PROTO)
    produce(kafka_bootstrap, topic, [(i % 2, framed(v1, order_bytes(f"o{i:03d}", i))) for i in range(50)])
    registry = api.post(REGISTRY, {"name": "registry", "url": schema_registry_url}, format="json").json()
    created = api.post(
        URL,
        {
            "name": "evolving-protobuf",
            "kafka_connection": kafka_conn.pk,
            "clickhouse_connection": ch_conn.pk,
            "schema_registry_connection": registry["id"],
            "spec": protobuf_spec(topic, table),
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    pk = created.json()["id"]
    celery_worker.start()
    assert api.post(f"{URL}{pk}/deploy/").json()["status"] == "deploy_requested"
    wait_status(api, pk, "running", worker=celery_worker)
    wait_for(lambda: rows(ch, table, "event_id") == (50, 50), timeout=JOB_TIMEOUT)

    # Version 2 is registered while the pipeline runs, and producers use it.
    v2 = register_proto(schema_registry_url, subject, ORDER_PROTO_V2)
    assert v2 != v1
    produce(kafka_bootstrap, topic, [
        (i % 2, framed(v2, order_bytes(f"o{i:03d}", i, coupon="XMAS"))) for i in range(50, 80)
    ])  # fmt: skip
    wait_for(lambda: rows(ch, table, "event_id") == (80, 80), timeout=JOB_TIMEOUT)

    def coupon_reported() -> dict | None:
        changes = api.get(f"{URL}{pk}/schema-changes/").json()["changes"]
        return next((c for c in changes if c["path"] == "coupon" and c["events"] == 30), None)

    coupon = wait_for(coupon_reported, timeout=60)
    assert coupon["kind"] == "new" and coupon["column"] == "coupon" and coupon["column_type"] == "String", coupon
    assert coupon["message"].startswith("new field `coupon` (string) seen in 30 events since "), coupon

    client.force_login(owner)
    page = client.get(f"/pipelines/{pk}/schema-changes/").content.decode()
    assert "New field <code>coupon</code> (string) seen in 30 events" in page
    assert 'data-add-column="coupon"' in page

    answer = client.post(f"/pipelines/{pk}/schema-changes/add-column/", {"path": "coupon"}).content.decode()
    assert "Column `coupon` added for `coupon`; version 2 maps it." in answer, answer
    columns = dict(ch.query(f"SELECT name, type FROM system.columns WHERE table = '{table}'").result_rows)
    assert columns["coupon"] == "String"
    detail = api.get(f"{URL}{pk}/").json()
    assert detail["current_version"] == 2
    assert {"field": "coupon", "column": "coupon", "type": "String"} in detail["spec"]["sink"]["columns"]
    wait_for(
        lambda: (
            api.get(f"{URL}{pk}/status/").json()["deployed_version"] == 2
            and api.get(f"{URL}{pk}/status/").json()["status"] == "running"
        ),
        timeout=JOB_TIMEOUT,
    )

    # The column is not Nullable (a Protobuf string): the rows written before held its default, '' until filled.
    filled = wait_for(lambda: api.get(f"{URL}{pk}/schema-changes/").json()["last_fill"] or None, timeout=JOB_TIMEOUT)
    assert filled.startswith("Column `coupon`: 30 rows written before it existed were filled from "), filled
    assert coupon_count(ch, table, "XMAS") == 30
    assert rows(ch, table, "event_id") == (80, 80)

    produce(kafka_bootstrap, topic, [
        (i % 2, framed(v2, order_bytes(f"o{i:03d}", i, coupon="NEWYEAR"))) for i in range(80, 100)
    ])  # fmt: skip
    wait_for(lambda: rows(ch, table, "event_id")[0] >= 100, timeout=JOB_TIMEOUT)
    assert rows(ch, table, "event_id") == (100, 100)  # every event once, across the change
    with_coupon = ch.query(f"SELECT count() FROM `{table}` WHERE coupon = 'NEWYEAR'").result_rows[0][0]
    assert with_coupon == 20
    assert all(c["path"] != "coupon" for c in api.get(f"{URL}{pk}/schema-changes/").json()["changes"])


def test_a_table_made_by_hand_is_never_altered(clickhouse_server, ch):
    """The guard the one-click action relies on: only tables the engine created (with its ingestion-time index)."""
    from clearflow_spec.connections import ClickHouseConnectionSpec
    from spark_jobs.sink import TableSpec, create_table_sql
    from webapp.connections.clickhouse_client import made_by_clearflow

    settings = ClickHouseConnectionSpec(host=clickhouse_server.host, port=clickhouse_server.port)
    by_hand, by_engine = f"hand_{uuid.uuid4().hex[:8]}", f"engine_{uuid.uuid4().hex[:8]}"
    ch.command(f"CREATE TABLE `{by_hand}` (order_id UUID) ENGINE = MergeTree ORDER BY order_id")
    ch.command(
        create_table_sql(
            TableSpec("default", by_engine, f"{by_engine}_dlq", "MergeTree", ["order_id"], [("order_id", "UUID")], 100)
        )
    )
    assert not made_by_clearflow(settings, database="default", table=by_hand)
    assert made_by_clearflow(settings, database="default", table=by_engine)
