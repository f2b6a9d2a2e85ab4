"""GET /metrics: the OpenMetrics exposition Prometheus scrapes, with the series the Spark job's publisher keeps."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import redis
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from clearflow_spec.protocol import CELERY_TASKS_KEY, HTTP_REQUESTS_KEY
from spark_jobs.metrics import BatchMetrics, MetricsPublisher, history_key, latest_key, totals_key
from tests.webapp.conftest import orders_spec
from webapp.pipelines import services

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-for-tests"


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, topics, clickhouse_target, redis_url, settings):
    settings.REDIS_URL = redis_url
    settings.CLEARFLOW_METRICS_TOKEN = TOKEN
    pipeline = services.pipeline_create(
        owner=owner,
        name="scraped",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topics.orders, clickhouse_target.database),
    )
    redis.Redis.from_url(redis_url).delete(
        latest_key(pipeline.job_name), history_key(pipeline.job_name), totals_key(pipeline.job_name)
    )
    return pipeline


def batch(batch_id: int) -> BatchMetrics:
    return BatchMetrics(
        pipeline="ignored",
        batch_id=batch_id,
        timestamp=f"2026-11-23T10:00:{batch_id:02d}.000Z",
        input_rows=100,
        duplicates_dropped=10 + batch_id,
        rows_written=85 - batch_id,
        dead_letters=1,
        filtered_out=4,
        batch_duration_ms=300 + batch_id,
        lag={"orders": {"0": 50 - batch_id, "1": 20}},
        total_lag=70 - batch_id,
    )


def scrape(client, token: str | None = TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return client.get("/metrics", headers=headers)


def samples(body: str) -> dict[tuple[str, frozenset], float]:
    """{(sample name, labels): value} of an OpenMetrics exposition, read with prometheus_client's parser."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }


def test_the_scrape_holds_the_pipelines_series_with_the_published_values(client, pipeline, redis_url, owner):
    publisher = MetricsPublisher(pipeline.job_name, redis_url)
    for batch_id in (0, 1, 2):
        publisher.publish(batch(batch_id))

    response = scrape(client)

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text")
    values = samples(response.content.decode())
    labels = {"pipeline_id": str(pipeline.pk), "pipeline": "scraped", "owner": owner.get_username()}

    def value(name: str, **extra: str) -> float:
        return values[(name, frozenset({**labels, **extra}.items()))]

    assert value("clearflow_pipeline_events_in_total") == 300
    assert value("clearflow_pipeline_duplicates_dropped_total") == 33
    assert value("clearflow_pipeline_rows_written_total") == 252
    assert value("clearflow_pipeline_dead_letters_total") == 3
    assert value("clearflow_pipeline_filtered_out_total") == 12
    assert value("clearflow_pipeline_batches_total") == 3
    # The latest record is the last one published.
    assert value("clearflow_pipeline_lag_records") == 68
    assert value("clearflow_pipeline_last_batch_duration_seconds") == pytest.approx(0.302)
    assert value("clearflow_pipeline_last_batch_timestamp_seconds") == 1795428002.0
    assert value("clearflow_pipeline_status", status="draft") == 1
    assert value("clearflow_pipeline_status", status="running") == 0
    assert values[("clearflow_metrics_store_up", frozenset())] == 1


def test_the_grafana_dashboard_queries_only_series_that_the_scrape_serves(client, pipeline, redis_url, ch_conn):
    from webapp.audits.models import AuditedTable, AuditResult

    MetricsPublisher(pipeline.job_name, redis_url).publish(batch(0))
    # An audit result, so that the audit series are served (tests/webapp/audits run the real audit).
    audited = AuditedTable.objects.create(
        owner=pipeline.owner, workspace=pipeline.workspace, connection=ch_conn, database="db", table="t",
        key_columns=["k"], time_column="at", pipeline=pipeline,
    )  # fmt: skip
    AuditResult.objects.create(audited_table=audited, window_seconds=3600, duplicate_keys=0, duplicate_rows=0)
    client.get("/health")  # so that the request counter has a sample
    served = {name for name, _ in samples(scrape(client).content.decode())}
    dashboard = json.loads((Path(__file__).parents[3] / "docs" / "grafana-dashboard.json").read_text())
    queried = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"clearflow_[a-z_]+", target["expr"])
    }
    assert queried - {"clearflow_celery_tasks_total"} <= served  # no task has run in this test
    assert "clearflow_celery_tasks_total" in queried


def test_a_pipeline_without_batches_has_its_status_and_no_counts(client, pipeline):
    values = samples(scrape(client).content.decode())
    names = {name for name, labels in values if ("pipeline_id", str(pipeline.pk)) in labels}
    assert names == {"clearflow_pipeline_status"}


def test_the_apps_own_requests_and_task_outcomes_are_counted(client, pipeline, redis_url):
    from celery import signals

    from worker.tasks import ping

    store = redis.Redis.from_url(redis_url)
    store.delete(HTTP_REQUESTS_KEY, CELERY_TASKS_KEY)
    client.get("/health")
    client.get("/no-such-page")
    # The signal a worker sends after the task (tests/worker/test_task_outcome_metrics.py runs a real one);
    # `ping.apply()` would build the app's result backend from the default settings for later tests.
    signals.task_success.send(sender=ping, result="pong")
    values = samples(scrape(client).content.decode())
    requests = {
        dict(labels)["view"]: v for (name, labels), v in values.items() if name == "clearflow_http_requests_total"
    }
    assert requests["health"] == 1
    assert requests["<unresolved>"] == 1
    tasks = {tuple(sorted(labels)): v for (name, labels), v in values.items() if name == "clearflow_celery_tasks_total"}
    assert tasks == {(("outcome", "success"), ("task", "clearflow.ping")): 1}


def test_anonymous_and_wrong_tokens_are_refused(client, pipeline, caplog):
    caplog.set_level("DEBUG")
    anonymous = scrape(client, token=None)
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"].startswith("Bearer")
    assert scrape(client, token="not-the-token").status_code == 403
    assert client.get("/metrics", headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    assert TOKEN not in scrape(client, token="x").content.decode()
    assert scrape(client).status_code == 200
    assert TOKEN not in caplog.text and "not-the-token" not in caplog.text


def test_without_a_token_setting_the_endpoint_does_not_exist(client, settings):
    settings.CLEARFLOW_METRICS_TOKEN = ""
    assert scrape(client).status_code == 404
    assert scrape(client, token="").status_code == 404


def test_a_plain_http_scrape_is_not_redirected_when_the_app_is_served_over_https(pipeline, settings):
    from django.test import Client

    settings.SECURE_SSL_REDIRECT = True
    assert scrape(Client()).status_code == 200
    assert Client().get("/login/").status_code == 301


def test_with_the_metrics_store_down_the_scrape_still_answers_with_the_statuses(client, pipeline, settings):
    from localstack.processes import free_port

    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there

    response = scrape(client)

    assert response.status_code == 200
    values = samples(response.content.decode())
    assert values[("clearflow_metrics_store_up", frozenset())] == 0
    names = {name for name, _ in values}
    assert "clearflow_pipeline_status" in names
    assert "clearflow_pipeline_events_in_total" not in names
