"""Names that reach SQL: the statement ClearFlow suggests for a table it did not create quotes every identifier
(a producer controls an event's keys), and name checks refuse a trailing newline (`\\Z`, not `$`)."""

from __future__ import annotations

import json

import clickhouse_connect
import pytest
import redis

from spark_jobs.metrics import history_key
from tests.webapp.conftest import make_clickhouse_target, orders_spec
from webapp.pipelines import services

HOSTILE_KEY = "x String, DROP COLUMN amount, ADD COLUMN y"


@pytest.fixture
def own_target(clickhouse_server):
    """This test alters `orders`: its own database, so the shared one keeps its five columns."""
    return make_clickhouse_target(clickhouse_server)


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, topics, own_target, redis_url, settings):
    settings.REDIS_URL = redis_url
    pipeline = services.pipeline_create(
        owner=owner,
        name="by-hand",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topics.orders, own_target.database),  # the table was made by hand
    )
    record = {"pipeline": pipeline.job_name, "batch_id": 1, "timestamp": "2026-11-23T10:00:01.000Z",
              "unmapped_keys": [HOSTILE_KEY], "sampled_events": 10, "sampled_with_unmapped": 1}  # fmt: skip
    client = redis.Redis.from_url(redis_url)
    client.delete(history_key(pipeline.job_name))
    client.zadd(history_key(pipeline.job_name), {json.dumps(record): 1795428001000})
    return pipeline


@pytest.mark.django_db
def test_the_add_the_column_yourself_statement_quotes_a_hostile_key(api, pipeline, clickhouse_server, own_target):
    response = api.post(
        f"/api/v1/pipelines/{pipeline.pk}/schema-changes/add-column/", {"path": HOSTILE_KEY}, format="json"
    )
    assert response.status_code == 409, response.content
    message = response.json()["message"]
    statement = message.split("Add the column yourself (", 1)[1].rsplit("), then map", 1)[0]
    database = own_target.database
    assert statement == (
        f"ALTER TABLE `{database}`.`orders` ADD COLUMN `x String, DROP COLUMN amount, ADD COLUMN y` Nullable(String)"
    )
    # Pasted as shown, it adds one column and drops none.
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    try:
        client.command(statement)
        columns = [row[0] for row in client.query(f"DESCRIBE TABLE `{database}`.orders").result_rows]
    finally:
        client.close()
    assert columns == ["order_id", "seq", "amount", "customer_name", "inserted_at", HOSTILE_KEY]


@pytest.mark.fast
@pytest.mark.parametrize(
    ("check", "name"),
    [
        ("clearflow_spec.spec_base:_IDENT_RE", "orders\n"),
        ("clearflow_spec.spec_base:_PATH_RE", "customer.name\n"),
        ("clearflow_spec.spec_base:_TOPIC_RE", "orders\n"),
        ("clearflow_spec.spec:_NAME_RE", "signups\n"),
        ("clearflow_spec.connections:_IDENT_RE", "analytics\n"),
        ("webapp.wizard.forms:IDENTIFIER", "orders\n"),
    ],
)
def test_a_name_with_a_trailing_newline_is_no_name(check, name):
    import importlib

    module, attribute = check.split(":")
    pattern = getattr(importlib.import_module(module), attribute)
    assert pattern.match(name.rstrip("\n")) and not pattern.match(name)


@pytest.mark.fast
def test_a_spec_with_a_newline_after_a_column_name_is_refused():
    from clearflow_spec.spec import SpecError, parse_spec

    data = orders_spec("orders", "analytics")
    data["sink"]["columns"][0]["column"] = "order_id\n"
    data["sink"]["clickhouse"].update({"host": "ch", "port": 8123})
    data["source"]["kafka"] = {"bootstrap_servers": "broker:9092"}
    with pytest.raises(SpecError) as refused:
        parse_spec({"name": "p", **data})
    assert "sink.columns[0].column" in str(refused.value)
