"""The expected dedup state in the API's validation: keys, bytes on disk, memory, and a warning before deploy when
this machine cannot hold it (webapp.pipelines.state_size)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import override_settings

from tests.webapp.conftest import order, orders_spec
from tests.webapp.heavy import answered

URL = "/api/v1/pipelines/"


@pytest.fixture
def body(kafka_conn, ch_conn, topics, clickhouse_target):
    spec = orders_spec(topics.orders, clickhouse_target.database)
    return {"kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec}


def validate(api, body, **extra):
    response = answered(api, api.post(f"{URL}validate/", {**body, **extra}, format="json"))
    assert response.status_code == 200, response.json()
    return response.json()


def test_a_one_hour_window_at_20k_events_per_second_holds_72_million_keys(api, body, a_machine_with_room):
    answer = validate(api, body, events_per_second=20_000)
    state = answer["estimated_state"]
    assert state["rate_source"] == "given"
    assert state["window_seconds"] == 3600
    assert state["keys"] == 72_000_000
    assert 12.0e9 < state["disk_bytes"] < 12.5e9  # about 170 bytes a key
    assert state["rocksdb_memory_mb"] == 960
    assert state["driver_memory"] == "1g"
    assert state["trigger_interval"] == "500 milliseconds"  # a busy pipeline's batches run back to back
    assert state["fits"] is True
    assert not [w for w in answer["warnings"] if w["path"] == "dedup.window"]


def test_a_light_pipelines_batches_wait_for_a_few_hundred_events(api, body):
    assert validate(api, body, events_per_second=100)["estimated_state"]["trigger_interval"] == "5 seconds"


def test_the_unique_share_lowers_the_keys(api, body):
    state = validate(api, body, events_per_second=20_000, unique_share=0.9)["estimated_state"]
    assert state["keys"] == 64_800_000


def test_a_seven_day_window_at_a_rate_no_disk_here_holds_is_warned_in_words(api, body):
    body["spec"]["dedup"]["window"] = "7d"
    answer = validate(api, body, events_per_second=100_000)  # 60 billion keys: several TB
    state = answer["estimated_state"]
    assert state["keys"] == 60_480_000_000
    assert state["fits"] is False
    [warning] = [w for w in answer["warnings"] if w["path"] == "dedup.window"]
    assert "60,480,000,000 keys" in warning["message"]
    assert "is free at" in warning["message"] and "shorter window" in warning["message"]


@override_settings(JOB_MEMORY_LIMIT="1g")
def test_a_job_memory_limit_below_the_jobs_need_is_warned(api, body):
    answer = validate(api, body, events_per_second=20_000)
    assert answer["estimated_state"]["fits"] is False
    [warning] = [w for w in answer["warnings"] if w["path"] == "dedup.window"]
    assert "1 GB a job may take" in warning["message"]


def test_without_a_rate_or_a_live_check_no_state_is_estimated(api, body):
    answer = validate(api, body)
    assert answer["estimated_state"] is None


def test_without_dedup_there_is_no_state(api, body):
    body["spec"]["dedup"] = None
    assert validate(api, body, events_per_second=20_000)["estimated_state"] is None


def test_a_live_check_sizes_the_state_from_the_topics_recent_rate(api, body, kafka_bootstrap):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"orders_now_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=2)]).values():
        future.result(timeout=10)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(600):  # written now: 600 in the last minute, 10 events/s
        producer.produce(topic, value=json.dumps(order(i)).encode(), partition=i % 2)
    assert producer.flush(10) == 0
    body["spec"]["source"]["topics"] = [topic]
    state = validate(api, body, check_live=True)["estimated_state"]
    assert state["rate_source"] == "topic"
    assert state["events_per_second"] == 10.0
    assert state["keys"] == 36_000  # every event counted unique: 10/s for the 1-hour window


def test_a_pipelines_validation_shows_its_state_too(api, body):
    created = api.post(URL, {**body, "name": "orders-sized"}, format="json")
    assert created.status_code == 201, created.json()
    answer = answered(
        api, api.post(f"{URL}{created.json()['id']}/validate/", {"events_per_second": 200}, format="json")
    ).json()
    assert answer["estimated_state"]["keys"] == 720_000
