"""Fixtures for the engine tests: one SparkSession for the session, topics, producers, ClickHouse."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] SparkSession for all in-process Spark tests (it costs 7-15 s to start)."""
    import logging

    from spark_jobs.session import build_session

    logging.getLogger("py4j").setLevel(logging.WARNING)

    session = build_session(
        app_name="clearflow-tests",
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"},
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": kafka_bootstrap})


@pytest.fixture
def new_topic(kafka_admin: Any) -> Any:
    """new_topic(partitions) -> a fresh topic name."""

    def create(partitions: int = 1) -> str:
        from confluent_kafka.admin import NewTopic

        name = f"t-{uuid.uuid4().hex[:10]}"
        kafka_admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)
        return name

    return create


@pytest.fixture(scope="session")
def ch(clickhouse_server: Any) -> Any:
    import clickhouse_connect

    return clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
