"""A real Celery worker counts its tasks' outcomes, and `/metrics` serves them (`clearflow_celery_tasks_total`)."""

from __future__ import annotations

import pytest
import redis
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from clearflow_spec.protocol import CELERY_TASKS_KEY
from tests.spark_jobs.engine_helpers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def ping_successes(client) -> float:
    response = client.get("/metrics", headers={"Authorization": "Bearer worker-test-token"})
    assert response.status_code == 200
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            if sample.name == "clearflow_celery_tasks_total" and sample.labels == {
                "task": "clearflow.ping",
                "outcome": "success",
            }:
                return sample.value
    return 0


def test_the_workers_task_outcomes_reach_the_scrape(client, settings, celery_worker, celery_app, redis_url):
    settings.CLEARFLOW_METRICS_TOKEN = "worker-test-token"
    redis.Redis.from_url(redis_url).delete(CELERY_TASKS_KEY)
    celery_worker.start()

    # A connection of its own: kombu's shared pools may hold one that an earlier test's fixture closed.
    with celery_app.connection_for_write() as connection:
        celery_app.send_task("clearflow.ping", connection=connection, ignore_result=True)

    assert wait_for(lambda: ping_successes(client), timeout=60) == 1
