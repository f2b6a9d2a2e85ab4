"""A pipeline with saved connections that point nowhere: the alert services and pages need no running Kafka or
ClickHouse (only the duplicate audit's end-to-end test, under tests/worker, does)."""

from __future__ import annotations

import pytest

from tests.webapp.conftest import orders_spec
from webapp.alerts.models import AlertRule
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines import services


def make_pipeline(owner, name: str = "orders"):
    kafka = kafka_connection_create(owner=owner, data={"name": f"{name} kafka", "bootstrap_servers": "127.0.0.1:9"})
    clickhouse = clickhouse_connection_create(owner=owner, data={"name": f"{name} ch", "host": "127.0.0.1", "port": 9})
    return services.pipeline_create(
        owner=owner,
        name=name,
        kafka_connection=kafka,
        clickhouse_connection=clickhouse,
        spec=orders_spec("orders", "analytics"),
    )


@pytest.fixture
def pipeline(owner):
    return make_pipeline(owner)


def rule(pipeline, kind: str) -> AlertRule:
    return AlertRule.objects.get(pipeline=pipeline, kind=kind)
