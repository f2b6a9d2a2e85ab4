"""The lag read from the broker and the pace judged on it reach every reader: the pipeline page, the API, `/metrics`
and the alerts. The worker reads the real broker (worker.lag.follow); a pace that is behind is judged by the same
rules the worker uses (clearflow_spec.pace) from readings of an hour that cannot be replayed in a test."""

from __future__ import annotations

import json
import time

import pytest
import redis
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from clearflow_spec import pace
from clearflow_spec.protocol import LAG_KEEP_SECONDS, LagReading, lag_key, pace_key
from tests.pipeline_states import walk_to
from tests.webapp.conftest import ORDER_COUNT, orders_spec
from webapp.alerts import services as alert_services
from webapp.alerts.models import AlertIncident, AlertRule
from webapp.pipelines import services
from webapp.pipelines.models import PipelineStatus

pytestmark = pytest.mark.django_db

TOKEN = "pace-scrape"


@pytest.fixture
def deployed(owner, kafka_conn, ch_conn, topics, clickhouse_target, redis_url, settings):
    settings.REDIS_URL = redis_url
    settings.CLEARFLOW_METRICS_TOKEN = TOKEN
    pipeline = services.pipeline_create(
        owner=owner,
        name="paced",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topics.orders, clickhouse_target.database),
    )
    walk_to(pipeline, PipelineStatus.DEPLOY_REQUESTED, deployed_version=pipeline.current_version)
    redis.Redis.from_url(redis_url).delete(lag_key(pipeline.job_name), pace_key(pipeline.job_name))
    return pipeline


def test_before_its_first_batch_a_deploy_shows_the_backlog_it_reads_from_the_broker(deployed, owner_client, api):
    from worker import lag, redis_state

    redis_state._client = None  # the worker's client, on this test's Redis
    assert lag.follow(deployed)
    reading = LagReading.from_json(redis.Redis.from_url(deployed_redis()).zrange(lag_key(deployed.job_name), 0, -1)[0])
    assert reading is not None and reading.position == "start"
    assert reading.total == ORDER_COUNT  # nothing committed yet: the whole topic, both partitions
    assert sum(len(parts) for parts in reading.lag.values()) == 2
    detail = api.get(f"/api/v1/pipelines/{deployed.pk}/").json()
    assert detail["pace"]["lag"] == ORDER_COUNT
    assert detail["pace"]["state"] == "unknown"  # one reading: its pace is known after a few
    history = api.get(f"/api/v1/pipelines/{deployed.pk}/lag/").json()
    assert [r["total"] for r in history["readings"]] == [ORDER_COUNT]
    page = owner_client.get(f"/pipelines/{deployed.pk}/metrics/").content.decode()
    assert f"Reading the backlog: {ORDER_COUNT} events to read" in page


def deployed_redis() -> str:
    from django.conf import settings

    return settings.REDIS_URL


def store_behind(pipeline) -> pace.Pace:
    """Two minutes of readings of a pipeline that reads 2,600 of the 20,000 events a second that arrive, and the
    pace the worker judges on them (as `worker.lag.follow` stores it)."""
    now = int(time.time() * 1000)
    readings = []
    for step in range(13):
        t = step * 10
        end, committed = 50_000_000 + 20_000 * t, 49_900_000 + 2_600 * t
        readings.append(
            LagReading(t_ms=now - 120_000 + t * 1000, total=end - committed, end_total=end, committed_total=committed)
        )
    judged = pace.judge(readings)
    cause = pace.behind_cause(
        judged,
        sizing={"light": False, "rocksdb_memory_mb": 512},
        seconds_since_last_batch=3,
        batch_ms=1000,
        insert_ms=100,
        load_average=2.5,
        cores=2,
        state_memory_needed_mb=None,
    )
    client = redis.Redis.from_url(deployed_redis())
    client.set(
        pace_key(pipeline.job_name),
        json.dumps({**judged.to_dict(), "cause": cause.code, "cause_words": cause.words}),
        ex=LAG_KEEP_SECONDS,
    )
    return judged


def test_a_pipeline_falling_behind_says_so_on_its_page_in_the_api_in_metrics_and_in_an_alert(
    deployed, owner_client, api, client
):
    walk_to(deployed, PipelineStatus.RUNNING)
    AlertRule.objects.filter(pipeline=deployed, kind="behind").update(minutes=1)
    judged = store_behind(deployed)
    assert judged.state == "behind"

    detail = api.get(f"/api/v1/pipelines/{deployed.pk}/").json()
    assert detail["pace"]["state"] == "behind"
    assert detail["pace"]["summary"] == judged.summary()
    assert detail["pace"]["cause"] == "cores"
    assert "more cores" in detail["pace"]["cause_words"]

    page = owner_client.get(f"/pipelines/{deployed.pk}/metrics/").content.decode()
    assert judged.summary() in page
    assert "This machine&#x27;s 2 cores are full" in page or "This machine's 2 cores are full" in page

    scraped = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).content.decode()
    samples = {
        sample.name: sample.value
        for family in text_string_to_metric_families(scraped)
        for sample in family.samples
        if sample.labels.get("pipeline_id") == str(deployed.pk)
    }
    assert samples["clearflow_pipeline_behind"] == 1
    assert samples["clearflow_pipeline_lag_records"] == judged.lag
    assert samples["clearflow_pipeline_lag_growth_records_per_second"] == pytest.approx(17_400, rel=0.01)

    # The rule holds for its minute before it fires; then its incident says what the page says.
    alert_services.alerts_evaluate()
    rule = AlertRule.objects.get(pipeline=deployed, kind="behind")
    assert rule.state == "pending"
    AlertRule.objects.filter(pk=rule.pk).update(state_since=rule.state_since.replace(year=2000))
    alert_services.alerts_evaluate()
    incident = AlertIncident.objects.get(pipeline=deployed, kind="behind", resolved_at__isnull=True)
    assert incident.summary.startswith(judged.summary())
    assert "more cores" in incident.summary
    # The consumer-lag rule reads the same lag (2.2M records, over its 100,000 threshold).
    lag_rule = AlertRule.objects.get(pipeline=deployed, kind="consumer_lag")
    assert lag_rule.last_value == judged.lag


def test_a_pace_not_read_for_minutes_is_shown_as_such_never_as_current(deployed, api):
    walk_to(deployed, PipelineStatus.RUNNING)
    store_behind(deployed)
    client = redis.Redis.from_url(deployed_redis())
    stored = json.loads(client.get(pace_key(deployed.job_name)))
    stored["measured_at_ms"] -= 10 * 60 * 1000
    client.set(pace_key(deployed.job_name), json.dumps(stored))
    detail = api.get(f"/api/v1/pipelines/{deployed.pk}/").json()
    assert detail["pace"]["stale"] is True
    assert "has not been read for a while" in detail["pace"]["summary"]
