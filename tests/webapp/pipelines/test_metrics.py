"""`pipeline_metrics` reads the records the Spark job's publisher (spark_jobs.metrics) pushes to Redis."""

from __future__ import annotations

import pytest
import redis

from localstack.processes import free_port
from spark_jobs.metrics import BatchMetrics, MetricsPublisher, recent_key
from tests.webapp.conftest import orders_spec
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines import selectors, services
from webapp.pipelines.metrics import MetricsUnavailableError

pytestmark = pytest.mark.django_db


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, topics, clickhouse_target, redis_url, settings):
    settings.REDIS_URL = redis_url
    pipeline = services.pipeline_create(
        owner=owner,
        name="metered-orders",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topics.orders, clickhouse_target.database),
    )
    redis.Redis.from_url(redis_url).delete(recent_key(job_name(pipeline)))
    return pipeline


def job_name(pipeline) -> str:
    """The name the worker hands the job, which the job publishes its metrics under."""
    return services.pipeline_job_spec(pipeline=pipeline).name


def batch(batch_id: int) -> BatchMetrics:
    return BatchMetrics(
        pipeline="metered-orders",
        batch_id=batch_id,
        timestamp=f"2026-11-21T10:00:0{batch_id}.000Z",
        input_rows=10 + batch_id,
        duplicates_dropped=1,
        rows_written=9 + batch_id,
        dead_letters=0,
        filtered_out=0,
        batch_duration_ms=250,
        total_lag=5,
    )


def test_records_the_job_published_oldest_first(pipeline, redis_url):
    publisher = MetricsPublisher(job_name(pipeline), redis_url)
    for batch_id in range(3):
        publisher.publish(batch(batch_id))
    records = selectors.pipeline_metrics(pipeline=pipeline)
    assert [r["batch_id"] for r in records] == [0, 1, 2]
    assert records[-1]["input_rows"] == 12
    assert records[-1]["rows_written"] == 11
    assert records[-1]["duplicates_dropped"] == 1
    assert records[-1]["total_lag"] == 5
    assert records[-1]["timestamp"] == "2026-11-21T10:00:02.000Z"
    assert [r["batch_id"] for r in selectors.pipeline_metrics(pipeline=pipeline, limit=2)] == [1, 2]


def test_nothing_yet_and_entries_that_are_not_json_objects(pipeline, redis_url):
    assert selectors.pipeline_metrics(pipeline=pipeline) == []
    redis.Redis.from_url(redis_url).lpush(recent_key(job_name(pipeline)), "not json", "[1, 2]")
    assert selectors.pipeline_metrics(pipeline=pipeline) == []


def test_redis_down_is_an_external_service_error(pipeline, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(MetricsUnavailableError) as info:
        selectors.pipeline_metrics(pipeline=pipeline)
    assert info.value.status_code == 502
    assert info.value.message == "The metrics store (Redis) did not answer."


def test_two_owners_pipelines_of_the_same_name_keep_their_metrics_apart(
    pipeline, other, kafka_bootstrap, clickhouse_server, topics, clickhouse_target, redis_url
):
    their_pipeline = services.pipeline_create(
        owner=other,
        name=pipeline.name,
        kafka_connection=kafka_connection_create(
            owner=other, data={"name": "theirs", "bootstrap_servers": kafka_bootstrap}
        ),
        clickhouse_connection=clickhouse_connection_create(
            owner=other, data={"name": "theirs", "host": clickhouse_server.host, "port": clickhouse_server.port}
        ),
        spec=orders_spec(topics.orders, clickhouse_target.database),
    )
    MetricsPublisher(job_name(pipeline), redis_url).publish(batch(1))

    assert [r["batch_id"] for r in selectors.pipeline_metrics(pipeline=pipeline)] == [1]
    assert selectors.pipeline_metrics(pipeline=their_pipeline) == []


def test_a_renamed_pipeline_keeps_its_job_name_and_metrics(pipeline, owner, redis_url):
    MetricsPublisher(job_name(pipeline), redis_url).publish(batch(1))

    renamed = services.pipeline_update(pipeline=pipeline, user=owner, name="orders-renamed")

    assert job_name(renamed) == job_name(pipeline)
    assert [r["batch_id"] for r in selectors.pipeline_metrics(pipeline=renamed)] == [1]
