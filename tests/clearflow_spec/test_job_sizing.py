"""The rule a job starts with (clearflow_spec.job_sizing.job_resources): a pure function of the topics' rates, the
state already in the checkpoint and the settings; what the worker asks for it is worker.job_sizing."""

from __future__ import annotations

import pytest

from clearflow_spec.job_sizing import UNKNOWN_RATE_ROCKSDB_MB, job_resources, standby_driver_memory
from clearflow_spec.sizing import (
    BYTES_PER_KEY_ON_DISK,
    DISK_HEADROOM,
    ROCKSDB_MEMORY_CONF,
    full_driver_memory,
    light_driver_memory,
    rocksdb_memory_mb,
    state_estimate,
    trigger_interval,
)
from tests.specs import EVENT_COLUMNS, EVENT_FIELDS, pipeline_spec

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

AUTO = {"driver_memory_setting": "auto", "trigger_setting": "auto"}


def spec(**kwargs):
    return pipeline_spec(
        topics=["events"],
        fields=EVENT_FIELDS,
        columns=EVENT_COLUMNS,
        table="events",
        kafka="127.0.0.1:9092",
        clickhouse=("127.0.0.1", 8123),
        **kwargs,
    )


def bound(resources) -> int:
    return int(dict(item.split("=", 1) for item in resources.spark_conf)[ROCKSDB_MEMORY_CONF])


def test_a_pipeline_without_state_gets_no_bound_and_the_full_heap():
    resources = job_resources(spec=spec(dedup=None), topic_rate=None, seen_rate=50.0, **AUTO)
    assert resources.spark_conf == ()
    assert resources.driver_memory == full_driver_memory()
    assert resources.events_per_second == 50.0


def test_a_quiet_dedup_is_light_and_sized_for_the_topics_rate():
    resources = job_resources(spec=spec(window="1h"), topic_rate=10.0, **AUTO)
    expected = state_estimate(events_per_second=10.0, window_seconds=3600)
    assert resources.light and resources.light_eligible
    assert resources.driver_memory == light_driver_memory()
    assert bound(resources) == expected.rocksdb_memory_mb
    assert resources.trigger_interval == trigger_interval(10.0)


def test_an_unknown_rate_gets_the_unsized_bound_and_set_sizes_stand():
    resources = job_resources(spec=spec(), topic_rate=None, driver_memory_setting="3g", trigger_setting="2 seconds")
    assert bound(resources) == UNKNOWN_RATE_ROCKSDB_MB
    assert (resources.driver_memory, resources.trigger_interval) == ("3g", "2 seconds")
    assert standby_driver_memory("3g") == "3g"
    assert standby_driver_memory("auto") == light_driver_memory()


def test_the_rate_seen_and_the_state_stored_raise_the_sizing():
    quiet = job_resources(spec=spec(window="7d"), topic_rate=1.0, **AUTO)
    seen = job_resources(spec=spec(window="7d"), topic_rate=1.0, seen_rate=2000.0, **AUTO)
    assert seen.events_per_second == 2000.0 and not seen.light
    assert bound(seen) > bound(quiet)
    stored = 2_000_000_000
    full = job_resources(spec=spec(window="7d"), topic_rate=1.0, stored_bytes=stored, **AUTO)
    keys = int(stored / DISK_HEADROOM) // BYTES_PER_KEY_ON_DISK
    assert bound(full) >= rocksdb_memory_mb(keys=keys, partitions=1)
