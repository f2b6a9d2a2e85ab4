"""GET /api/v1/pipelines/{id}/metrics/: the series the Spark job's own publisher (spark_jobs.metrics) keeps."""

from __future__ import annotations

import pytest
import redis

from localstack.processes import free_port
from spark_jobs.metrics import BatchMetrics, MetricsPublisher, history_key, totals_key
from tests.webapp.conftest import orders_spec
from webapp.pipelines import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, topics, clickhouse_target, redis_url, settings):
    settings.REDIS_URL = redis_url
    pipeline = services.pipeline_create(
        owner=owner,
        name="charted",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topics.orders, clickhouse_target.database),
    )
    redis.Redis.from_url(redis_url).delete(history_key(pipeline.job_name), totals_key(pipeline.job_name))
    return pipeline


def url(pipeline) -> str:
    return f"/api/v1/pipelines/{pipeline.pk}/metrics/"


def batch(batch_id: int, *, minute: int = 0, dead: int = 1) -> BatchMetrics:
    return BatchMetrics(
        pipeline="ignored",
        batch_id=batch_id,
        timestamp=f"2026-11-23T10:{minute:02d}:{batch_id:02d}.000Z",
        input_rows=100,
        duplicates_dropped=10 + batch_id,
        rows_written=85 - batch_id,
        dead_letters=dead,
        filtered_out=4,
        batch_duration_ms=300 + batch_id,
        lag={"orders": {"0": 50 - batch_id, "1": 20}},
        total_lag=70 - batch_id,
        input_rows_per_second=200.0 + batch_id,
    )


def test_the_series_comes_back_in_order_with_totals_that_count_dead_letters(api, pipeline, redis_url):
    publisher = MetricsPublisher(pipeline.job_name, redis_url)
    for batch_id in (0, 2, 1, 3):  # published out of order: the series is ordered by the batches' start
        publisher.publish(batch(batch_id))
    body = api.get(url(pipeline)).json()
    records = body["records"]
    assert [r["batch_id"] for r in records] == [0, 1, 2, 3]
    assert records[1]["timestamp"] == "2026-11-23T10:00:01.000Z"
    assert records[1]["t_ms"] == 1795428001000
    assert records[1]["input_rows_per_second"] == 201.0
    assert records[1]["duplicates_dropped"] == 11
    assert records[1]["duplicate_share"] == 0.11
    assert records[1]["rows_written"] == 84
    assert records[1]["dead_letters"] == 1
    assert records[1]["lag"] == {"orders": {"0": 49, "1": 20}}
    assert records[1]["batch_duration_ms"] == 301
    assert body["totals"] == {
        "input_rows": 400,
        "duplicates_dropped": 46,
        "rows_written": 334,
        "dead_letters": 4,
        "filtered_out": 16,
        "batches": 4,
        "since": "2026-11-23T10:00:00.000Z",
    }
    assert body["has_more"] is False
    assert body["next_since"] == records[-1]["t_ms"]


def test_since_and_limit_page_forward(api, pipeline, redis_url):
    publisher = MetricsPublisher(pipeline.job_name, redis_url)
    for batch_id in range(5):
        publisher.publish(batch(batch_id))
    first = api.get(url(pipeline), {"since": "2026-11-23T10:00:00Z", "limit": 2}).json()
    assert [r["batch_id"] for r in first["records"]] == [1, 2]
    assert first["has_more"] is True
    rest = api.get(url(pipeline), {"since": first["next_since"]}).json()
    assert [r["batch_id"] for r in rest["records"]] == [3, 4]
    assert rest["has_more"] is False
    assert api.get(url(pipeline), {"since": rest["next_since"]}).json()["records"] == []
    newest = api.get(url(pipeline), {"limit": 2}).json()
    assert [r["batch_id"] for r in newest["records"]] == [3, 4]


def test_retention_keeps_the_newest_records_within_the_age_limit(api, pipeline, redis_url):
    by_count = MetricsPublisher(pipeline.job_name, redis_url, history_max_records=3)
    for batch_id in range(6):
        by_count.publish(batch(batch_id))
    assert [r["batch_id"] for r in api.get(url(pipeline)).json()["records"]] == [3, 4, 5]

    by_age = MetricsPublisher(pipeline.job_name, redis_url, history_max_age_s=90)
    by_age.publish(batch(6, minute=2))  # 10:02:06: 10:00:03..05 are more than 90 s older
    assert [r["timestamp"] for r in api.get(url(pipeline)).json()["records"]] == ["2026-11-23T10:02:06.000Z"]
    assert 0 < redis.Redis.from_url(redis_url).ttl(history_key(pipeline.job_name)) <= 90


def test_nothing_yet_bad_since_and_redis_down(api, pipeline, settings):
    body = api.get(url(pipeline)).json()
    assert body["records"] == [] and body["totals"]["dead_letters"] == 0 and body["totals"]["since"] is None
    response = api.get(url(pipeline), {"since": "yesterday"})
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "since"
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = api.get(url(pipeline))
    assert response.status_code == 502
    assert response.json()["message"] == "The metrics store (Redis) did not answer."


def test_an_outsider_gets_404_and_anonymous_401(other_api, anon_api, pipeline, redis_url):
    MetricsPublisher(pipeline.job_name, redis_url).publish(batch(0))
    response = other_api.get(url(pipeline))
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert anon_api.get(url(pipeline)).status_code == 401
