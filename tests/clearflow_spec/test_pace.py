"""The pace a pipeline keeps, judged from lag readings, and when its job is re-sized (clearflow_spec.pace)."""

from __future__ import annotations

import pytest

from clearflow_spec import pace
from clearflow_spec.protocol import LagReading

pytestmark = pytest.mark.fast


def series(*, seconds: int, every: int = 10, arriving: float, reading: float, start_lag: int = 0) -> list[LagReading]:
    """Readings every `every` s for `seconds`: events arrive and are committed at the given rates."""
    out = []
    for t in range(0, seconds + 1, every):
        end = int(10_000_000 + arriving * t)
        committed = int(10_000_000 - start_lag + reading * t)
        committed = min(committed, end)
        at = 1_000_000 + t * 1000
        out.append(LagReading(t_ms=at, total=end - committed, end_total=end, committed_total=committed))
    return out


def test_a_lag_that_grows_is_behind_and_says_by_how_much_in_words():
    judged = pace.judge(series(seconds=120, arriving=20_000, reading=2_600, start_lag=100_000))
    assert judged.state == "behind"
    assert judged.arriving_per_second == pytest.approx(20_000, rel=0.01)
    assert judged.reading_per_second == pytest.approx(2_600, rel=0.01)
    assert judged.growing_per_second == pytest.approx(17_400, rel=0.01)
    assert judged.summary() == ("Behind: lag 2.19M events, growing 17.4k/s (events arrive at 20k/s, read at 2.6k/s).")


def test_a_stuck_job_on_a_quiet_topic_with_a_backlog_is_behind():
    judged = pace.judge(series(seconds=60, arriving=0, reading=0, start_lag=50_000))
    assert judged.state == "behind"
    assert "not shrinking" in judged.summary()


def test_a_shrinking_lag_is_catching_up_with_the_time_left():
    judged = pace.judge(series(seconds=120, arriving=1_000, reading=11_000, start_lag=3_000_000))
    assert judged.state == "catching_up"
    assert judged.catch_up_seconds == pytest.approx(180, rel=0.05)
    assert judged.summary() == "Catching up: lag 1.8M events, shrinking 10k/s, about 3 min to go."


def test_a_batch_worth_of_lag_is_keeping_up():
    # A 5 s trigger at 1,000 events/s: up to 5,000 records behind between two batches.
    readings = series(seconds=60, arriving=1_000, reading=1_000, start_lag=5_000)
    assert pace.judge(readings).state == "keeping_up"


def test_too_few_readings_are_not_judged():
    assert pace.judge([]).state == "unknown"
    assert pace.judge([]).summary() == "Lag not read yet."
    short = series(seconds=10, arriving=20_000, reading=0, start_lag=1_000_000)
    assert pace.judge(short).state == "unknown"


def test_the_rate_is_that_of_the_last_half_minute_not_averaged_with_a_quiet_start():
    quiet = series(seconds=90, arriving=0, reading=0)
    busy_start = quiet[-1]
    busy = [
        LagReading(
            t_ms=busy_start.t_ms + t * 1000,
            total=int(3_000 * t * 0.5),
            end_total=busy_start.end_total + 3_000 * t,
            committed_total=busy_start.committed_total + int(3_000 * t * 0.5),
        )
        for t in (10, 20, 30)
    ]
    judged = pace.judge(quiet + busy)
    assert judged.arriving_per_second == pytest.approx(3_000, rel=0.01)


LIGHT = {"events_per_second": 0.0, "light": True, "light_eligible": True, "rocksdb_memory_mb": 64}
BUSY = {"events_per_second": 20_000.0, "light": False, "light_eligible": True, "rocksdb_memory_mb": 1024}


def test_a_light_job_that_events_outgrow_is_re_sized_for_the_rate_seen():
    judged = pace.judge(series(seconds=120, arriving=20_000, reading=2_600, start_lag=100_000))
    resize = pace.resize_for(judged, sizing=LIGHT, running_seconds=600)
    assert resize is not None
    assert resize.events_per_second == pytest.approx(20_000, rel=0.01)
    assert resize.reason == "events arrive at 20k/s (lag 2.19M events and growing), sized for 0/s"


def test_a_light_job_is_not_judged_before_it_settles_and_not_when_it_keeps_up():
    judged = pace.judge(series(seconds=120, arriving=20_000, reading=2_600, start_lag=100_000))
    assert pace.resize_for(judged, sizing=LIGHT, running_seconds=30) is None
    keeping_up = pace.judge(series(seconds=120, arriving=200, reading=200))
    assert pace.resize_for(keeping_up, sizing=LIGHT, running_seconds=600) is None


def test_a_run_still_in_its_first_batch_is_not_re_sized_however_long_its_start():
    judged = pace.judge(series(seconds=120, arriving=20_000, reading=0, start_lag=100_000))
    assert pace.resize_for(judged, sizing=LIGHT, running_seconds=600, first_batch_done=False) is None
    assert pace.resize_for(judged, sizing=LIGHT, running_seconds=600, first_batch_done=True) is not None


def test_a_busy_job_whose_state_outgrew_its_memory_is_re_sized():
    judged = pace.judge(series(seconds=120, arriving=40_000, reading=30_000, start_lag=500_000))
    assert pace.resize_for(judged, sizing=BUSY, running_seconds=600, state_memory_needed_mb=1024) is None
    resize = pace.resize_for(judged, sizing=BUSY, running_seconds=600, state_memory_needed_mb=2048)
    assert resize is not None and "needs 2048 MB of memory, it has 1024 MB" in resize.reason


def test_a_busy_job_is_light_again_only_after_half_an_hour_quiet():
    judged = pace.judge(series(seconds=120, arriving=100, reading=100))
    long_quiet = {"quiet_max_per_second": 300.0, "quiet_seconds": 1800.0}
    resize = pace.resize_for(judged, sizing=BUSY, running_seconds=3600, **long_quiet)
    assert resize is not None and resize.reason.endswith("light again")
    short_quiet = {"quiet_max_per_second": 300.0, "quiet_seconds": 900.0}
    assert pace.resize_for(judged, sizing=BUSY, running_seconds=3600, **short_quiet) is None
    # A burst above half the light rate within the half hour keeps it busy (hysteresis).
    burst = {"quiet_max_per_second": 800.0, "quiet_seconds": 1800.0}
    assert pace.resize_for(judged, sizing=BUSY, running_seconds=3600, **burst) is None
    # A join is never light.
    join = {**BUSY, "light_eligible": False}
    assert pace.resize_for(judged, sizing=join, running_seconds=3600, **long_quiet) is None


def test_the_cause_of_falling_behind_in_words():
    judged = pace.judge(series(seconds=120, arriving=20_000, reading=2_600, start_lag=100_000))
    common = {"seconds_since_last_batch": 5.0, "batch_ms": 2000, "insert_ms": 100, "cores": 2}
    light = pace.behind_cause(judged, sizing=LIGHT, load_average=0.5, state_memory_needed_mb=None, **common)
    assert light.code == "light"
    cores = pace.behind_cause(judged, sizing=BUSY, load_average=3.9, state_memory_needed_mb=None, **common)
    assert cores.code == "cores"
    assert "more cores" in cores.words and "SPARK_MASTER" in cores.words
    slow = {**common, "insert_ms": 1500}
    clickhouse = pace.behind_cause(judged, sizing=BUSY, load_average=0.5, state_memory_needed_mb=None, **slow)
    assert clickhouse.code == "clickhouse"
    stuck = {**common, "seconds_since_last_batch": 300.0}
    stalled = pace.behind_cause(judged, sizing=BUSY, load_average=0.5, state_memory_needed_mb=None, **stuck)
    assert stalled.code == "stalled" and "5 min" in stalled.words


def test_counts_and_durations_in_words():
    assert pace.count(3_712_000) == "3.71M"
    assert pace.count(18_000) == "18k"
    assert pace.count(12) == "12"
    assert pace.duration(95) == "1 min 35 s"
    assert pace.duration(7200) == "2 h"


def test_a_light_job_reading_a_backlog_faster_than_a_light_rate_is_re_sized_for_its_batches():
    catching_up = pace.judge(series(seconds=120, arriving=0, reading=12_000, start_lag=20_000_000))
    assert catching_up.state == "catching_up"
    resize = pace.resize_for(catching_up, sizing=LIGHT, running_seconds=600)
    assert resize is not None and resize.events_per_second == pytest.approx(12_000, rel=0.01)
    assert "a backlog of 18.6M events read at 12k/s" in resize.reason
