"""Sizing the dedup state before a pipeline runs (clearflow_spec.sizing): the figures the review step, the API and
the worker use."""

from __future__ import annotations

import pytest

from clearflow_spec.sizing import (
    STANDBY_POOL_MAX,
    driver_java_options,
    full_driver_memory,
    light_driver_memory,
    machine_check,
    parse_memory,
    rocksdb_memory_mb,
    standby_pool_size,
    state_estimate,
    state_partitions,
    trigger_interval,
)

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

GB = 1024**3
MB = 1024**2


def test_a_one_hour_window_at_20k_events_per_second_holds_72_million_keys():
    estimate = state_estimate(events_per_second=20_000, window_seconds=3600)
    assert estimate.keys == 72_000_000
    assert estimate.disk_bytes == 72_000_000 * 170  # about 12 GB on disk
    # its files' index and filter blocks (3.5 bytes a key, half again to spare) in the 40% of the cache kept for
    # them: 945 MB, rounded up to 64 MB
    assert estimate.rocksdb_memory_mb == 960
    assert estimate.driver_memory == "1g"
    assert estimate.job_memory_bytes == (1024 + 960 + 1280) * MB  # a state this large fills its bound


def test_a_light_pipeline_gets_the_light_heap():
    # 100 events/s over the default 1h window: 360,000 keys, the light heap instead of the full 1 GB.
    estimate = state_estimate(events_per_second=100, window_seconds=3600)
    assert estimate.keys == 360_000
    assert estimate.driver_memory == light_driver_memory() == "512m"
    # Its one state partition's file (31 MB) has 1.2 MB of index and filter blocks; each of the cache's 64 shards
    # must have room for two such in its 40%: a 384 MB bound, of which it fills its 31 MB and the write buffers.
    assert estimate.rocksdb_memory_mb == 384
    assert estimate.job_memory_bytes == (512 + 31 + 192 + 1280) * MB


def test_the_light_heap_ends_at_1000_events_per_second_over_an_hour():
    assert state_estimate(events_per_second=1000, window_seconds=3600).driver_memory == "512m"
    assert state_estimate(events_per_second=1001, window_seconds=60).driver_memory == "1g"  # the batches' rows
    assert state_estimate(events_per_second=1000, window_seconds=3601).driver_memory == "1g"  # the state's keys


def test_a_light_rate_over_a_long_window_keeps_the_full_heap():
    assert state_estimate(events_per_second=100, window_seconds=7 * 86_400).driver_memory == full_driver_memory()


def test_a_seven_day_window_at_200_events_per_second_holds_121_million_keys():
    estimate = state_estimate(events_per_second=200, window_seconds=7 * 86_400)
    assert estimate.keys == 120_960_000
    assert round(estimate.disk_bytes / GB, 1) == 19.2
    assert estimate.rocksdb_memory_mb == 1536


def test_only_the_unique_share_of_the_events_is_held():
    estimate = state_estimate(events_per_second=20_000, window_seconds=3600, unique_share=0.9)
    assert estimate.keys == 64_800_000


def test_the_state_never_holds_more_keys_than_there_can_be():
    estimate = state_estimate(events_per_second=1000, window_seconds=86_400, key_space=5000)
    assert estimate.keys == 5000
    assert estimate.capped_by_key_space


def test_rocksdb_memory_stays_within_its_bounds():
    assert state_estimate(events_per_second=0, window_seconds=60).rocksdb_memory_mb == 64
    assert state_estimate(events_per_second=100_000, window_seconds=7 * 86_400).rocksdb_memory_mb == 2048


def test_a_short_window_at_a_high_rate_gets_room_for_its_largest_files_in_each_cache_shard():
    # 5 minutes at 20,000 events/s: 6M keys, little metadata in all (32 MB with its spare), but each of the two
    # partitions' files reaches RocksDB's 64 MB, whose 2.4 MB filter and index blocks a 128 MB bound's 2 MB
    # shards could not keep (the job fell minutes behind re-reading them): 768 MB.
    assert rocksdb_memory_mb(keys=6_000_000, partitions=2) == 768
    assert (
        rocksdb_memory_mb(keys=6_000_000, partitions=2)
        == state_estimate(events_per_second=20_000, window_seconds=300).rocksdb_memory_mb
    )
    # smaller files, smaller shards' need
    assert rocksdb_memory_mb(keys=100_000, partitions=2) < rocksdb_memory_mb(keys=1_000_000, partitions=2)


def test_a_machine_with_room_holds_the_state():
    estimate = state_estimate(events_per_second=20_000, window_seconds=3600)
    check = machine_check(estimate, checkpoint_root="/tmp", memory_limit_bytes=24 * GB, free_disk=100 * GB)
    assert check.fits and check.warnings == []


def test_too_little_free_disk_is_said_in_words():
    estimate = state_estimate(events_per_second=200, window_seconds=7 * 86_400)
    check = machine_check(estimate, checkpoint_root="/data/checkpoints", memory_limit_bytes=24 * GB, free_disk=10 * GB)
    assert not check.fits
    [warning] = check.warnings
    assert "120,960,000 keys" in warning
    assert "only 10 GB is free at /data/checkpoints" in warning
    assert "shorter window" in warning


def test_a_job_memory_limit_below_what_the_job_needs_is_said_in_words():
    estimate = state_estimate(events_per_second=20_000, window_seconds=3600)
    check = machine_check(estimate, checkpoint_root="/tmp", memory_limit_bytes=1 * GB, free_disk=100 * GB)
    assert not check.fits
    [warning] = check.warnings
    assert "3.19 GB of memory" in warning and "1 GB a job may take" in warning


def test_a_remote_checkpoint_root_is_not_checked_for_disk():
    estimate = state_estimate(events_per_second=200, window_seconds=7 * 86_400)
    check = machine_check(estimate, checkpoint_root="s3a://bucket/checkpoints", memory_limit_bytes=24 * GB)
    assert check.free_disk_bytes is None and check.fits


@pytest.mark.parametrize(("text", "expected"), [("2g", 2 * GB), ("512m", 512 * MB), ("1536", 1536 * MB)])
def test_memory_sizes_read_as_spark_writes_them(text, expected):
    assert parse_memory(text) == expected


def test_a_memory_size_without_a_number_is_refused():
    with pytest.raises(ValueError, match="invalid memory size"):
        parse_memory("lots")


@pytest.mark.parametrize(
    ("events_per_second", "expected"),
    [
        (20_000, "500 milliseconds"),
        (5_000, "500 milliseconds"),
        (4_999, "1 second"),
        (500, "1 second"),
        (250, "2 seconds"),
        (100, "5 seconds"),
        (10, "5 seconds"),
        (0, "5 seconds"),
        (None, "1 second"),  # not known: neither stretched nor back to back
    ],
)
def test_a_busy_pipeline_runs_its_batches_back_to_back_and_a_light_one_waits_for_a_few_hundred_events(
    events_per_second, expected
):
    assert trigger_interval(events_per_second) == expected


@pytest.mark.parametrize(
    ("events_per_second", "window_seconds", "expected"),
    [
        (100, 3600, 1),  # light: 360,000 keys
        (1_000, 3600, 1),  # the light bounds' edge: 3.6M keys
        (2_000, 3600, None),  # busy: one partition per core (the runner's default)
        (100, 7 * 86400, None),  # a light rate, but 60M keys in a 7-day window
    ],
)
def test_a_light_pipelines_state_is_one_partition(events_per_second, window_seconds, expected):
    estimate = state_estimate(events_per_second=events_per_second, window_seconds=window_seconds, unique_share=1.0)
    assert state_partitions(events_per_second=events_per_second, keys=estimate.keys) == expected


def test_a_light_heap_comes_with_a_lean_jvm_and_a_full_one_with_the_jvms_defaults():
    light = driver_java_options(state_estimate(events_per_second=100, window_seconds=3600).driver_memory)
    assert {"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"} <= set(light.split())
    assert driver_java_options("384m") == light  # any heap up to the light one
    assert driver_java_options(state_estimate(events_per_second=20_000, window_seconds=3600).driver_memory) == ""
    assert driver_java_options("2g") == "" and driver_java_options("lots") == ""


def test_a_trigger_shorter_than_the_batches_fixed_cost_is_said_once_in_words():
    from clearflow_spec.sizing import TriggerCheck, interval_ms

    assert interval_ms("500 milliseconds") == 500
    assert interval_ms("1 second") == 1000
    assert interval_ms("5 seconds") == 5000
    assert interval_ms("soon") is None
    check = TriggerCheck("500 milliseconds")
    phases = {"latestOffset": 40, "queryPlanning": 420, "walCommit": 180, "commitOffsets": 450, "addBatch": 3000}
    said = [check.add(phases) for _ in range(8)]
    assert said[:4] == [None] * 4 and said[5:] == [None] * 3
    assert said[4] == (
        "The trigger (500 milliseconds) is shorter than each micro-batch's fixed cost (about 1.1 s to ask the topics "
        "for offsets, plan the batch and write the offset and commit logs): the batches run back to back and an "
        "event waits at least that long. Choose a trigger of at least 1.1 seconds, or leave it to the sizing "
        "(CLEARFLOW_TRIGGER_INTERVAL=auto)."
    )
    quick = TriggerCheck("5 seconds")
    assert all(quick.add(phases) is None for _ in range(8))


def test_the_standby_pool_is_sized_from_the_hosts_memory():
    # A 24 GiB machine (its kernel reports 23.5): 4 JVMs of about 1 GB beside the stack and the pipelines, enough
    # for five deploys one after the other while the pool refills.
    assert standby_pool_size(int(23.5 * GB)) == 4
    assert standby_pool_size(8 * GB) == 1  # a small host still gets one
    assert standby_pool_size(256 * GB) == STANDBY_POOL_MAX
    assert standby_pool_size(None) == 1  # a system that does not say
