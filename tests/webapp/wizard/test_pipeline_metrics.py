"""The pipeline page's metrics card reads what the Spark job publishes to Redis."""

from __future__ import annotations

import json

import pytest
import redis
from django.urls import reverse

from spark_jobs.metrics import recent_key

pytestmark = pytest.mark.django_db


def record(batch: int, **values) -> str:
    base = {
        "pipeline": "metered",
        "batch_id": batch,
        "timestamp": f"2026-11-21T10:00:{batch:02d}Z",
        "input_rows": 100,
        "duplicates_dropped": 7,
        "rows_written": 90,
        "dead_letters": 1,
        "filtered_out": 2,
        "batch_duration_ms": 420,
        "total_lag": 12,
    }
    return json.dumps({**base, **values})


@pytest.fixture
def pipeline(create_pipeline):
    return create_pipeline("metered")


def test_metrics_show_the_latest_batch_and_the_totals(owner_client, pipeline, redis_url, settings):
    settings.REDIS_URL = redis_url
    client = redis.Redis.from_url(redis_url)
    key = recent_key(pipeline.job_name)
    client.delete(key)
    for batch in range(3):  # the job pushes the newest first
        client.lpush(key, record(batch, input_rows=100 + batch, rows_written=90 + batch))
    html = owner_client.get(reverse("wizard:pipeline_metrics", kwargs={"pk": pipeline.pk})).content.decode()
    assert "<b>102</b><span>rows in (last batch)</span>" in html
    assert "Totals over the last 3 batches: 303 in, 273 written, 21 duplicates dropped." in html
    series = json.loads(html.split('data-metrics="')[1].split('"></div>')[0].replace("&quot;", '"'))
    assert series["input_rows"] == [100, 101, 102] and len(series["t"]) == 3


def test_no_metrics_yet_and_redis_down(owner_client, pipeline, redis_url, settings):
    from localstack.processes import free_port

    settings.REDIS_URL = redis_url
    redis.Redis.from_url(redis_url).delete(recent_key(pipeline.job_name))
    url = reverse("wizard:pipeline_metrics", kwargs={"pk": pipeline.pk})
    assert "No metrics yet" in owner_client.get(url).content.decode()
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    assert "did not answer" in owner_client.get(url).content.decode()


def test_other_users_get_404(client, other, pipeline):
    client.force_login(other)
    assert client.get(reverse("wizard:pipeline_metrics", kwargs={"pk": pipeline.pk})).status_code == 404
