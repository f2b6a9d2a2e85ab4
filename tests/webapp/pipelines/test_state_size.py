"""What the worker starts a job with (worker.job_sizing.job_resources): the driver memory, RocksDB's
memory bound and the micro-batch trigger sized from the topic's recent rate, or the configured ones."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from django.test import override_settings

from clearflow_spec.sizing import rocksdb_memory_mb
from clearflow_spec.spec import parse_spec
from tests.webapp.conftest import order, orders_spec
from worker.job_sizing import job_resources as sized_resources
from worker.job_sizing import standby_driver_memory

pytestmark = pytest.mark.django_db

ROCKSDB = "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "pipeline-spec.md"


@pytest.fixture
def busy_topic(kafka_bootstrap) -> str:
    """6,000 events written now: 100 events/s over the last minute."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"busy_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})  # kept: the futures need their client
    for future in admin.create_topics([NewTopic(topic, 2)]).values():
        future.result(timeout=10)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(6000):
        producer.produce(topic, value=json.dumps(order(i)).encode(), partition=i % 2)
    assert producer.flush(10) == 0
    return topic


def job_resources(**kwargs):
    """The heap, the Spark settings, the trigger and whether it is light (what the job starts with)."""
    resources = sized_resources(**kwargs)
    return resources.driver_memory, resources.spark_conf, resources.trigger_interval, resources.light


def spec_for(topic: str, kafka_bootstrap: str, window: str):
    spec = orders_spec(topic, "db")
    spec |= {"name": "sized", "version": 1}
    spec["source"]["kafka"] = {"bootstrap_servers": kafka_bootstrap}
    spec["sink"]["clickhouse"] |= {"host": "127.0.0.1", "port": 8123}
    spec["dedup"]["window"] = window
    return parse_spec(json.dumps(spec))


@override_settings(SPARK_DRIVER_MEMORY="auto")
def test_auto_sizes_rocksdb_from_the_topics_recent_rate(kafka_conn, busy_topic, kafka_bootstrap):
    # 100 events/s for 7 days: 60.48M keys; their files' index and filter blocks (3.5 bytes a key, half again to
    # spare) in the 40% of RocksDB's cache kept for them: 757 MB, rounded up to 64 MB.
    driver_memory, conf, trigger, light = job_resources(
        spec=spec_for(busy_topic, kafka_bootstrap, "7d"), kafka_connection=kafka_conn
    )
    assert driver_memory == "1g"
    assert conf == (f"{ROCKSDB}=768",)
    assert trigger == "5 seconds"  # 100 events/s: a batch of about 500 events each 5 s
    assert not light  # 60M keys: its job keeps its niceness (its compactions go below its tasks)


@override_settings(SPARK_DRIVER_MEMORY="auto")
def test_a_re_size_sizes_for_the_rate_the_worker_saw_and_the_run_records_it(kafka_conn, busy_topic, kafka_bootstrap):
    # The topic's recent rate is 100 events/s; the worker saw the running job take 20,000 (worker.lag): the larger.
    spec = spec_for(busy_topic, kafka_bootstrap, "1h")
    resources = sized_resources(spec=spec, kafka_connection=kafka_conn, events_per_second=20_000)
    assert resources.driver_memory == "1g" and not resources.light
    assert resources.trigger_interval == "500 milliseconds"
    assert resources.sizing_record() == {
        "events_per_second": 20_000.0,
        "light": False,
        "light_eligible": True,
        "driver_memory": "1g",
        "rocksdb_memory_mb": rocksdb_memory_mb(keys=72_000_000, partitions=2),
        "trigger_interval": "500 milliseconds",
    }
    assert resources.words().startswith("a 1g heap, ")
    # A lower rate seen than the topic's own: the topic's (the state is never sized below what comes).
    quiet = sized_resources(spec=spec, kafka_connection=kafka_conn, events_per_second=10)
    assert quiet.events_per_second == 100.0 and quiet.light


@override_settings(SPARK_DRIVER_MEMORY="auto")
def test_auto_gives_a_light_pipeline_the_light_heap(kafka_conn, busy_topic, kafka_bootstrap):
    # 100 events/s for an hour: 360,000 keys; at most 1,000 events/s and 3.6M keys is light.
    driver_memory, conf, _, light = job_resources(
        spec=spec_for(busy_topic, kafka_bootstrap, "1h"), kafka_connection=kafka_conn
    )
    assert driver_memory == "512m"
    # its state in one partition, whose file's index and filter blocks each cache shard has room for
    assert conf == (f"{ROCKSDB}=384", "spark.sql.shuffle.partitions=1")
    assert light  # its job yields the CPU once it runs (spark_jobs.cpu_priority)


@override_settings(SPARK_DRIVER_MEMORY="auto")
def test_the_standby_jobs_are_sized_for_a_light_pipeline():
    assert standby_driver_memory() == "512m"


@override_settings(SPARK_DRIVER_MEMORY="2g")
def test_a_configured_driver_memory_sizes_the_standby_jobs_too():
    assert standby_driver_memory() == "2g"


@override_settings(SPARK_DRIVER_MEMORY="3g", SPARK_TRIGGER_INTERVAL="2 seconds")
def test_a_configured_driver_memory_and_trigger_override_the_sized_ones(kafka_conn, busy_topic, kafka_bootstrap):
    driver_memory, conf, trigger, _ = job_resources(
        spec=spec_for(busy_topic, kafka_bootstrap, "1h"), kafka_connection=kafka_conn
    )
    assert driver_memory == "3g"
    assert trigger == "2 seconds"
    # 100/s for an hour: 360,000 keys in one partition (clearflow_spec.sizing.rocksdb_memory_mb): 384 MB.
    assert conf == (f"{ROCKSDB}=384", "spark.sql.shuffle.partitions=1")


@override_settings(SPARK_DRIVER_MEMORY="auto")
def test_a_pipeline_without_dedup_has_no_rocksdb_bound(kafka_conn, busy_topic, kafka_bootstrap):
    spec = spec_for(busy_topic, kafka_bootstrap, "1h").model_copy(update={"dedup": None})
    assert job_resources(spec=spec, kafka_connection=kafka_conn) == ("1g", (), "1 second", False)


@override_settings(SPARK_DRIVER_MEMORY="auto")
def test_an_unknown_rate_gets_a_middling_rocksdb_bound(busy_topic, kafka_bootstrap):
    assert job_resources(spec=spec_for(busy_topic, kafka_bootstrap, "1h"), kafka_connection=None) == (
        "1g",
        (f"{ROCKSDB}=768",),
        "1 second",
        False,  # not known to be light: its job keeps its niceness
    )


@override_settings(SPARK_DRIVER_MEMORY="auto")
def test_a_restart_with_a_large_state_keeps_a_bound_that_fits_it(kafka_conn, busy_topic, kafka_bootstrap, tmp_path):
    # 8 GiB of state files in the checkpoint (the live state and its older versions: 4 GiB live), a quiet topic:
    # room in each cache shard for two of its largest files' index and filter blocks (sized as if one partition
    # held it all): 768 MB, more than the 384 MB the topic's rate calls for; and
    # some 25M keys are not a light pipeline's state: the full heap, not the 512m the topic's rate alone gives.
    partition = tmp_path / "state" / "0" / "0"
    partition.mkdir(parents=True)
    with open(partition / "1.zip", "wb") as handle:
        handle.truncate(8 * 1024**3)  # sparse: no disk used
    spec = spec_for(busy_topic, kafka_bootstrap, "1h")
    assert job_resources(spec=spec, kafka_connection=kafka_conn, checkpoint=str(tmp_path)) == (
        "1g",
        (f"{ROCKSDB}=768",),  # not light: no single state partition either
        "5 seconds",  # the trigger follows the rate (100 events/s), not the state
        False,  # nor is its job in the idle CPU class
    )


@override_settings(SPARK_DRIVER_MEMORY="auto")
def test_a_join_sizes_rocksdb_for_both_sides_and_the_join(kafka_conn, busy_topic, kafka_bootstrap):
    # The documented join (dedup 1h on each side, a 30-minute join) with both sides at 100 events/s: 360,000 keys
    # a side, and the join's 200 events/s over 30 minutes at 1.5 keys' worth an event: 540,000. The 1.26M keys
    # in all, in two partitions (a join is never a light pipeline's single one): 704 MB, where the left side
    # alone would have had 384 MB and one partition.
    spec = json.loads(DOCS.read_text().split("## Join (version 2)", 1)[1].split("```json\n", 1)[1].split("```")[0])
    spec["source"]["topics"] = spec["join"]["source"]["topics"] = [busy_topic]
    spec["source"]["kafka"] = spec["join"]["source"]["kafka"] = {"bootstrap_servers": kafka_bootstrap}
    _, conf, _, light = job_resources(spec=parse_spec(json.dumps(spec)), kafka_connection=kafka_conn)
    assert conf == (f"{ROCKSDB}=704",)
    assert not light
    assert rocksdb_memory_mb(keys=360_000 * 2 + 540_000, partitions=2) == 704
