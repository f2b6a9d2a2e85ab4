"""`pipeline_metrics` reads the records the Spark job's publisher (spark_jobs.metrics) pushes to Redis."""

from __future__ import annotations

import pytest
import redis

from localstack.processes import free_port
from spark_jobs.metrics import BatchMetrics, MetricsPublisher, recent_key
from tests.webapp.conftest import orders_spec
from webapp.pipelines import selectors, services
from webapp.pipelines.metrics import MetricsUnavailableError

pytestmark = pytest.mark.django_db


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, topics, clickhouse_target, redis_url, settings):
    settings.REDIS_URL = redis_url
    redis.Redis.from_url(redis_url).delete(recent_key("metered-orders"))
    return services.pipeline_create(
        owner=owner,
        name="metered-orders",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topics.orders, clickhouse_target.database),
    )


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
    publisher = MetricsPublisher("metered-orders", redis_url)
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
    redis.Redis.from_url(redis_url).lpush(recent_key("metered-orders"), "not json", "[1, 2]")
    assert selectors.pipeline_metrics(pipeline=pipeline) == []


def test_redis_down_is_an_external_service_error(pipeline, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(MetricsUnavailableError) as info:
        selectors.pipeline_metrics(pipeline=pipeline)
    assert info.value.status_code == 502
    assert info.value.message == "The metrics store (Redis) did not answer."
