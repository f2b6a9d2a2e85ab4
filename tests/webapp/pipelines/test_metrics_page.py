"""The pipeline page's metrics summary and the list's throughput read what the Spark job's publisher
(spark_jobs.metrics) keeps in Redis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import redis
from django.urls import reverse

from spark_jobs.metrics import BatchMetrics, MetricsPublisher, history_key, latest_key, totals_key

pytestmark = pytest.mark.django_db


def batch(batch_id: int, *, at: datetime | None = None, **values) -> BatchMetrics:
    at = at or datetime(2026, 11, 21, 10, 0, batch_id, tzinfo=UTC)
    base = {
        "input_rows": 100,
        "duplicates_dropped": 7,
        "rows_written": 90,
        "dead_letters": 1,
        "filtered_out": 2,
        "batch_duration_ms": 420,
        "total_lag": 12,
        "input_rows_per_second": 250.0,
    }
    return BatchMetrics(
        pipeline="ignored", batch_id=batch_id, timestamp=at.isoformat().replace("+00:00", "Z"), **{**base, **values}
    )


@pytest.fixture
def pipeline(create_pipeline, redis_url, settings):
    settings.REDIS_URL = redis_url
    pipeline = create_pipeline("metered")
    client = redis.Redis.from_url(redis_url)
    client.delete(latest_key(pipeline.job_name), history_key(pipeline.job_name), totals_key(pipeline.job_name))
    return pipeline


def test_the_summary_shows_totals_with_dead_letters_and_the_last_batch(owner_client, pipeline, redis_url):
    publisher = MetricsPublisher(pipeline.job_name, redis_url)
    for batch_id in range(3):
        publisher.publish(batch(batch_id, input_rows=100 + batch_id, rows_written=90 + batch_id, dead_letters=batch_id))
    html = owner_client.get(reverse("pipelines:metrics", kwargs={"pk": pipeline.pk})).content.decode()
    assert "<b>303</b><span>events in</span>" in html
    assert "<b>273</b><span>rows written</span>" in html
    assert "<b>21</b><span>duplicates dropped</span>" in html
    assert '<b id="total-dead-letters">3</b>' in html
    assert "Totals over 3 batches since 2026-11-21 10:00:00 UTC." in html
    assert "Last batch 2 at 2026-11-21 10:00:02 UTC: 102 in, 92 written" in html


def test_the_page_has_the_charts_and_the_dead_letters(owner_client, pipeline):
    html = owner_client.get(reverse("pipelines:detail", kwargs={"pk": pipeline.pk})).content.decode()
    assert f'data-metrics-url="/api/v1/pipelines/{pipeline.pk}/metrics/"' in html
    assert f'hx-get="/pipelines/{pipeline.pk}/dead-letters/"' in html


def test_no_metrics_yet_and_redis_down(owner_client, pipeline, settings):
    from localstack.processes import free_port

    url = reverse("pipelines:metrics", kwargs={"pk": pipeline.pk})
    assert "No metrics yet" in owner_client.get(url).content.decode()
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    assert "did not answer" in owner_client.get(url).content.decode()
    assert owner_client.get(reverse("pipelines:list")).status_code == 200  # the list renders without


def test_the_list_shows_current_throughput_only_for_a_recent_batch(owner_client, create_pipeline, pipeline, redis_url):
    idle = create_pipeline("idle")
    now = datetime.now(UTC)
    MetricsPublisher(pipeline.job_name, redis_url).publish(batch(7, at=now, input_rows_per_second=1234.5))
    MetricsPublisher(idle.job_name, redis_url).publish(batch(7, at=now - timedelta(minutes=5)))
    html = owner_client.get(reverse("pipelines:list")).content.decode()
    rows = {name: html.split(f"<strong>{name}</strong>")[1].split("</tr>")[0] for name in ("metered", "idle")}
    assert "1,234.5 events/s" in rows["metered"]  # the one number format
    assert "events/s" not in rows["idle"]
    assert 'badge badge-draft">Draft' in rows["idle"]


def test_other_users_get_404(client, other, pipeline):
    client.force_login(other)
    assert client.get(reverse("pipelines:metrics", kwargs={"pk": pipeline.pk})).status_code == 404
