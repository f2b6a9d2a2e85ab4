"""Users, API clients, saved connections, and real Kafka topics / ClickHouse tables with known content.

The broker and ClickHouse are the session's real ones (tests/conftest.py). Topics and databases get
random names, so tests never see each other's data.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from rest_framework.test import APIClient

from clearflow_spec import sizing
from tests.specs import spec_dict
from webapp.api.tokens import api_token_create
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.services import pipeline_create

if TYPE_CHECKING:
    from localstack.keycloak import Keycloak

ORDER_COUNT = 30
ORDER_PARTITIONS = 2


def produce_records(bootstrap: str, topic: str, values: list[bytes], *, partitions: int = 1) -> None:
    """Create `topic` and write the values round-robin over partitions.

    Record timestamps are one second apart in order, so "newest" and "oldest" are well defined."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=partitions)]).values():
        future.result(timeout=10)
    producer = Producer({"bootstrap.servers": bootstrap})
    base_ms = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp() * 1000)
    for i, value in enumerate(values):
        producer.produce(
            topic, value=value, key=str(i).encode(), partition=i % partitions, timestamp=base_ms + i * 1000
        )
        producer.poll(0)
    assert producer.flush(10) == 0


def raw_column(table: str, column: str, pk: int) -> str:
    """A column as stored in PostgreSQL, bypassing the model field (to see what is really on disk)."""
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "{column}" FROM "{table}" WHERE id = %s', [pk])
        return cursor.fetchone()[0]


def order(i: int) -> dict:
    start = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    return {
        "order_id": str(uuid.UUID(int=7000 + i, version=4)),
        "seq": i,
        "amount": 10.5 + i,
        "paid": i % 2 == 0,
        "created_at": (start + timedelta(minutes=i)).isoformat().replace("+00:00", "Z"),
        "customer": {"id": 100 + i % 5, "name": f"Customer {i % 5}"},
        "tags": ["a", "b"],
    }


@dataclass(frozen=True)
class Topics:
    orders: str
    empty: str
    mixed: str


@pytest.fixture(scope="session")
def topics(kafka_bootstrap: str) -> Topics:
    """`orders`: 30 JSON orders over 2 partitions (seq 0..29); `empty`: no records; `mixed`: JSON, text, NaN
    and bytes that are not UTF-8."""
    suffix = uuid.uuid4().hex[:8]
    names = Topics(orders=f"orders_{suffix}", empty=f"empty_{suffix}", mixed=f"mixed_{suffix}")
    produce_records(
        kafka_bootstrap, names.orders, [json.dumps(order(i)).encode() for i in range(ORDER_COUNT)], partitions=2
    )
    produce_records(kafka_bootstrap, names.empty, [])
    produce_records(
        kafka_bootstrap, names.mixed, [b'{"a": 1}', b"not json", b'{"a": 2.5, "b": null}', b'{"a": NaN}', b"\xff\xfe"]
    )
    return names


@pytest.fixture(scope="session")
def avro_topic(kafka_bootstrap: str, schema_registry_url: str) -> str:
    """Avro orders in the Confluent wire format: 3 of schema version 1, 2 of version 2 (with `coupon`), then one
    event that is not Avro (tests/webapp/avro_events.py)."""
    from tests.webapp.avro_events import make_avro_topic

    return make_avro_topic(kafka_bootstrap, schema_registry_url)


@dataclass(frozen=True)
class ClickHouseTarget:
    database: str
    table: str


def make_clickhouse_target(clickhouse_server) -> ClickHouseTarget:
    """A database with `orders` (some required columns, one Nullable, one with a default) and `other`."""
    import clickhouse_connect

    database = f"cf_test_{uuid.uuid4().hex[:8]}"
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    try:
        client.command(f"CREATE DATABASE `{database}`")
        client.command(
            f"CREATE TABLE `{database}`.orders (order_id UUID, seq Int64, amount Float64, "
            "customer_name Nullable(String), inserted_at DateTime DEFAULT now()) "
            "ENGINE = ReplacingMergeTree ORDER BY order_id"
        )
        client.command(f"CREATE TABLE `{database}`.other (x String) ENGINE = MergeTree ORDER BY x")
    finally:
        client.close()
    return ClickHouseTarget(database=database, table="orders")


@pytest.fixture(scope="session")
def clickhouse_target(clickhouse_server) -> ClickHouseTarget:
    """The shared target database: a test that alters its tables takes `make_clickhouse_target` instead."""
    return make_clickhouse_target(clickhouse_server)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Throttle counters and cached answers live in the (process-local) cache: none carries over."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def a_machine_with_room(monkeypatch):
    """100 GB free at the checkpoint root and 16 GB of memory, whatever the machine running the tests has: a test
    of a state that fits must not turn red on a runner with a fuller disk."""
    monkeypatch.setattr(sizing, "free_disk_bytes", lambda path: 100 * 1024**3)
    monkeypatch.setattr(sizing, "total_memory_bytes", lambda: 16 * 1024**3)


BRIEF_CLIENT = "clearflow-brief"  # client credentials, tokens that live one second (the expired-token test)


@pytest.fixture(scope="session")
def keycloak(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keycloak]:
    """A real Keycloak (localstack.keycloak), started once per session by the first test that asks for it: the
    single sign-on tests (tests/webapp/sso/) and the OAUTHBEARER broker's (tests/webapp/api/) share it."""
    from localstack.keycloak import WEB_CLIENT, start_keycloak

    brief = {
        "clientId": BRIEF_CLIENT,
        "enabled": True,
        "publicClient": False,
        "secret": "brief-client-secret",
        "standardFlowEnabled": False,
        "serviceAccountsEnabled": True,
        "attributes": {"access.token.lifespan": "1"},
        "protocolMappers": [
            {
                "name": "audience",
                "protocol": "openid-connect",
                "protocolMapper": "oidc-audience-mapper",
                "config": {"included.client.audience": WEB_CLIENT, "access.token.claim": "true"},
            }
        ],
    }
    provider = start_keycloak(tmp_path_factory.mktemp("keycloak"), extra_clients=[brief])
    yield provider
    provider.stop()


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("owner", password="owner-pass-123")


@pytest.fixture
def other(db):
    return get_user_model().objects.create_user("other", password="other-pass-123")


def token_client(user) -> APIClient:
    client = APIClient()
    _, text = api_token_create(user=user, name="tests")
    client.credentials(HTTP_AUTHORIZATION=f"Token {text}")
    return client


@pytest.fixture
def api(owner) -> APIClient:
    return token_client(owner)


@pytest.fixture
def other_api(other) -> APIClient:
    return token_client(other)


@pytest.fixture
def anon_api() -> APIClient:
    return APIClient()


@pytest.fixture
def kafka_conn(owner, kafka_bootstrap):
    return kafka_connection_create(owner=owner, data={"name": "local kafka", "bootstrap_servers": kafka_bootstrap})


@pytest.fixture
def ch_conn(owner, clickhouse_server):
    return clickhouse_connection_create(
        owner=owner,
        data={"name": "local clickhouse", "host": clickhouse_server.host, "port": clickhouse_server.port},
    )


def orders_spec(topic: str, database: str, *, create_table: bool = False) -> dict:
    """A valid spec for the orders topic into `database`.orders (connections are filled in by the service)."""
    return spec_dict(
        topics=[topic],
        fields=[
            ("order_id", "uuid"),
            ("seq", "int"),
            ("amount", "float"),
            ("created_at", "datetime"),
            ("customer.name", "string"),
        ],
        database=database,
        table="orders",
        create_table=create_table,
        engine="ReplacingMergeTree",
        columns=[
            ("order_id", "order_id", "UUID"),
            ("seq", "seq", "Int64"),
            ("amount", "amount", "Float64"),
            ("customer.name", "customer_name", "Nullable(String)"),
        ],
    )


# Pages: a logged-in browser client, and the connections and draft pipelines their tests use.


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def kafka_connection(owner, kafka_bootstrap):
    return kafka_connection_create(owner=owner, data={"name": "local", "bootstrap_servers": kafka_bootstrap})


@pytest.fixture
def clickhouse_connection(owner, clickhouse_server):
    return clickhouse_connection_create(
        owner=owner, data={"name": "local-ch", "host": clickhouse_server.host, "port": clickhouse_server.port}
    )


@pytest.fixture
def create_pipeline(owner, kafka_connection, clickhouse_connection):
    """Makes a draft pipeline of the owner's with a one-field spec (topic t into default.t), by name."""

    def create(name: str):
        return pipeline_create(
            owner=owner,
            name=name,
            kafka_connection=kafka_connection,
            clickhouse_connection=clickhouse_connection,
            spec={
                "source": {"topics": ["t"], "fields": [{"path": "a", "type": "string"}]},
                "sink": {
                    "clickhouse": {"database": "default"},
                    "table": "t",
                    "columns": [{"field": "a", "column": "a", "type": "String"}],
                },
            },
        )

    return create
