"""A pipeline with a join over the REST API: saved with the right side on the pipeline's Kafka connection, and
each bad input refused with its error at the field that causes it."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.webapp.conftest import order, orders_spec
from tests.webapp.heavy import answered
from webapp.pipelines.models import Pipeline

URL = "/api/v1/pipelines/"


@pytest.fixture(scope="module")
def payments_topics(kafka_bootstrap):
    """`long`: retention 7 days; `short`: retention 10 minutes; both with payments of the orders. `empty`: no event."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    suffix = uuid.uuid4().hex[:8]
    names = {"long": f"payments_{suffix}", "short": f"payments_short_{suffix}", "empty": f"payments_none_{suffix}"}
    retention = {"long": str(7 * 86400 * 1000), "short": str(600 * 1000), "empty": str(7 * 86400 * 1000)}
    new = [NewTopic(names[k], 1, 1, config={"retention.ms": retention[k]}) for k in names]
    for future in admin.create_topics(new).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for key in ("long", "short"):
        for i in range(5):
            payment = {"payment_id": f"p{i}", "order_id": order(i)["order_id"]}
            producer.produce(names[key], json.dumps(payment).encode())
    assert producer.flush(10) == 0
    return names


def join_body(kafka_conn, ch_conn, topics, clickhouse_target, right_topic: str) -> dict:
    spec = orders_spec(topics.orders, clickhouse_target.database, create_table=True)
    spec["version"] = 2
    spec["sink"]["table"] = f"orders_paid_{uuid.uuid4().hex[:6]}"
    spec["join"] = {
        "source": {
            "topics": [right_topic],
            "fields": [{"path": "payment_id", "type": "string"}, {"path": "order_id", "type": "uuid"}],
        },
        "keys": [{"left": "order_id", "right": "order_id"}],
        "window": "30m",
        "type": "left",
    }
    spec["sink"]["columns"] = [
        {"field": "left.order_id", "column": "order_id", "type": "UUID"},
        {"field": "left.seq", "column": "seq", "type": "Int64"},
        {"field": "right.payment_id", "column": "payment_id", "type": "Nullable(String)"},
    ]
    return {"name": "orders-paid", "kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec}


def test_a_join_is_saved_with_the_right_side_on_the_pipelines_connection(
    api, kafka_conn, ch_conn, topics, clickhouse_target, payments_topics, kafka_bootstrap
):
    body = join_body(kafka_conn, ch_conn, topics, clickhouse_target, payments_topics["long"])
    checked = answered(api, api.post(f"{URL}validate/", {**body, "check_live": True}, format="json"))
    assert checked.status_code == 200, checked.json()
    response = api.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    spec = response.json()["spec"]
    assert spec["version"] == 2 and spec["join"]["window"] == "30m" and spec["join"]["type"] == "left"
    assert spec["join"]["source"]["kafka"]["bootstrap_servers"] == kafka_bootstrap


def test_keys_of_different_types_are_refused_at_the_right_key(
    api, kafka_conn, ch_conn, topics, clickhouse_target, payments_topics
):
    body = join_body(kafka_conn, ch_conn, topics, clickhouse_target, payments_topics["long"])
    body["spec"]["join"]["keys"] = [{"left": "seq", "right": "payment_id"}]
    response = api.post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {
            "path": "spec.join.keys[0].right",
            "message": "key types differ: 'payment_id' is string on the right, 'seq' is int on the left; "
            "join fields of the same type",
        }
    ]
    assert not Pipeline.objects.exists()


def test_a_window_longer_than_a_topics_retention_is_refused_at_the_window(
    api, kafka_conn, ch_conn, topics, clickhouse_target, payments_topics
):
    body = join_body(kafka_conn, ch_conn, topics, clickhouse_target, payments_topics["short"])
    response = answered(api, api.post(f"{URL}validate/", {**body, "check_live": True}, format="json"))
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {
            "path": "spec.join.window",
            "message": f"the window (30m) is longer than the retention of the right topic "
            f"'{payments_topics['short']}' (10m): shorten the window or raise the topic's retention.ms",
        }
    ]
    body["spec"]["join"]["window"] = "5m"
    assert answered(api, api.post(f"{URL}validate/", {**body, "check_live": True}, format="json")).status_code == 200


def test_a_missing_right_topic_is_refused_at_its_name(api, kafka_conn, ch_conn, topics, clickhouse_target):
    body = join_body(kafka_conn, ch_conn, topics, clickhouse_target, "no-such-payments")
    response = answered(api, api.post(f"{URL}validate/", {**body, "check_live": True}, format="json"))
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"path": "spec.join.source.topics[0]", "message": "topic 'no-such-payments' does not exist on the cluster"}
    ]


def test_a_right_side_with_no_events_in_the_sample_is_refused_at_its_topics(
    api, kafka_conn, ch_conn, topics, clickhouse_target, payments_topics
):
    body = join_body(kafka_conn, ch_conn, topics, clickhouse_target, payments_topics["empty"])
    response = answered(api, api.post(f"{URL}validate/", {**body, "check_live": True}, format="json"))
    assert response.status_code == 400, response.json()
    assert {
        "path": "spec.join.source.topics",
        "message": f"no events in the sample of '{payments_topics['empty']}': the join's fields and keys cannot be "
        "checked; produce some events to the topic first, or pick another topic",
    } in response.json()["errors"]
