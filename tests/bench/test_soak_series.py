"""bench/soak.py's pure parts: latency percentiles from histograms, the per-minute line, the exact-rows verdict, the
summary against the steady-state targets, the jstat reading."""

from __future__ import annotations

import os

import pytest

from tests.bench.soak_helpers import MIB, sample, soak_series

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


def test_percentiles_from_a_histogram_are_the_upper_edge_of_the_bucket_holding_the_rank():
    # 100 rows: 50 in 0-9 ms, 45 in 10-19 ms, 5 in 100-109 ms.
    histogram = {0: 50, 1: 45, 10: 5}
    assert soak_series.histogram_percentile(histogram, 0.50) == 10
    assert soak_series.histogram_percentile(histogram, 0.95) == 20
    assert soak_series.histogram_percentile(histogram, 0.96) == 110
    assert soak_series.histogram_percentile({}, 0.95) is None


def test_the_last_thirds_p95_comes_from_the_merged_histograms_not_from_the_minutes_p95s():
    fast = {5: 95, 6: 5}  # p95 60 ms
    slow = {5: 50, 300: 50}  # p95 3010 ms
    merged = soak_series.merge_histograms([fast, slow])
    assert merged == {5: 145, 6: 5, 300: 50}
    assert soak_series.histogram_percentile(merged, 0.95) == 3010
    assert soak_series.histogram_percentile(merged, 0.70) == 60


def test_batch_duration_percentiles_are_nearest_rank():
    assert soak_series.percentile([400, 100, 300, 200], 0.50) == 200
    assert soak_series.percentile([400, 100, 300, 200], 0.95) == 400
    assert soak_series.percentile([], 0.5) is None


def test_the_minute_line_says_rows_latency_batches_state_memory_and_restarts():
    line = soak_series.minute_line(sample(3, rows=3_200_000, expected_unique=3_240_000, restarts=1))
    assert line.startswith("min   3 |  20,000 ev/s | rows    3,200,000 of    3,240,000 |")
    assert "p50    700 ms p95  1,400 ms" in line
    assert "batch p50    650 ms max  1,200 ms (60)" in line
    assert "state    3,240,000 keys    240 MB disk" in line
    assert "heap    700 MB rss  2,000 MB" in line
    assert line.endswith("| restarts 1")


def test_the_minute_line_shows_a_dash_for_what_could_not_be_measured():
    line = soak_series.minute_line(
        sample(1, latency_p50_ms=None, latency_p95_ms=None, heap_used_bytes=None, rss_bytes=None, state_keys=None)
    )
    assert "p50      - ms p95      - ms" in line
    assert "heap      - MB rss      - MB" in line
    assert "state            - keys" in line


def test_exact_rows_need_every_unique_event_once():
    exact = soak_series.rows_verdict(rows=900, distinct_ids=900, unique_produced=900)
    assert exact.exact and exact.words == "exact: 900 rows, the 900 unique events, each once"
    doubled = soak_series.rows_verdict(rows=905, distinct_ids=900, unique_produced=900)
    assert not doubled.exact and doubled.words.endswith("5 rows written twice")
    missing = soak_series.rows_verdict(rows=880, distinct_ids=880, unique_produced=900)
    assert not missing.exact and missing.words.endswith("20 unique events missing")
    both = soak_series.rows_verdict(rows=1_890, distinct_ids=880, unique_produced=900)
    assert both.words.endswith("1,010 rows written twice; 20 unique events missing")


def test_a_steady_run_meets_the_targets():
    samples = [sample(m) for m in range(1, 10)]
    verdict = soak_series.rows_verdict(rows=9, distinct_ids=9, unique_produced=9)
    summary = soak_series.summarize(samples, verdict, {"rate": 20_000, "window": "1h"})
    assert summary["last_third"]["minutes"] == [7, 8, 9]
    assert summary["last_third"]["latency_p95_ms"] == 1_400
    assert summary["achieved_rate"] == 20_000
    assert summary["checks"] == {
        "no_restarts": True,
        "exact_rows": True,
        "p95_last_third_within_target": True,
        "p95_not_growing": True,
        "rss_flat_last_third": True,
    }
    assert summary["targets_met"] is True


def test_a_growing_p95_a_climbing_rss_and_a_restart_fail_the_targets():
    samples = [
        sample(m, latency_p95_ms=1_000 + 300 * m, rss_bytes=(2_000 + 400 * m) * MIB, histogram={300: 10})
        for m in range(1, 10)
    ]
    samples[-1].restarts = 1
    verdict = soak_series.rows_verdict(rows=9, distinct_ids=8, unique_produced=8)
    summary = soak_series.summarize(samples, verdict, {})
    assert summary["checks"] == {
        "no_restarts": False,
        "exact_rows": False,
        "p95_last_third_within_target": False,  # 3010 ms
        "p95_not_growing": False,
        "rss_flat_last_third": False,
    }
    assert summary["last_third"]["p95_slope_ms_per_min"] == 300.0
    assert summary["last_third"]["rss_slope_mb_per_min"] == 400.0


def test_heap_used_is_read_from_jstat_columns():
    output = (
        "    S0C         S1C         S0U         S1U          EC           EU           OC           OU"
        "          MC         MU       CCSC      CCSU     YGC     YGCT     FGC    FGCT     CGC    CGCT       GCT   \n"
        "        0.0     8192.0         0.0      8192.0     145408.0      40960.0     370688.0     181234.5"
        "    98048.0    96457.2   12032.0   11224.0     41     0.345     0     0.000    10     0.050     0.395\n"
    )
    assert soak_series.heap_used_bytes(output) == round((8192.0 + 40960.0 + 181234.5) * 1024)
    assert soak_series.heap_used_bytes("12345 not found\n") is None


def test_a_minutes_slowest_batch_names_its_longest_phases():
    batches = [
        {"batch_duration_ms": 600, "phases_ms": {"addBatch": 500, "walCommit": 30}},
        {
            "batch_duration_ms": 5543,
            "phases_ms": {"addBatch": 5100, "walCommit": 12, "state_commit": 4200, "rocksdb_write_stall": 3900},
        },
    ]
    assert soak_series.slowest_phases(batches) == "addBatch 5100 ms, state_commit 4200 ms, rocksdb_write_stall 3900 ms"
    assert soak_series.slowest_phases([{"batch_duration_ms": 700}]) == ""  # a job from before phases_ms
    assert soak_series.slowest_phases([]) == ""


def test_state_on_disk_counts_a_file_with_two_names_once(tmp_path):
    """The state store's uploads into the checkpoint are hard links of RocksDB's files (one file, several names)."""
    state = tmp_path / "pipeline-1" / "state" / "0" / "0"
    state.mkdir(parents=True)
    (state / "1.changelog").write_bytes(b"c" * 10_000)
    sst = state / "SSTs" / "000042-a.sst"
    sst.parent.mkdir()
    sst.write_bytes(b"s" * 100_000)
    os.link(sst, state / "SSTs" / "000042-b.sst")  # the same file uploaded under a second name
    (tmp_path / "pipeline-1" / "offsets").mkdir()
    (tmp_path / "pipeline-1" / "offsets" / "1").write_bytes(b"o" * 50_000)  # not state

    blocks = sum(os.stat(p).st_blocks * 512 for p in (state / "1.changelog", sst))
    assert soak_series.state_disk_bytes(tmp_path) == blocks
    assert soak_series.state_disk_bytes(tmp_path / "pipeline-1" / "offsets") is None


def test_the_minute_from_which_a_ramp_kept_up_to_the_end():
    from soak_series import MinuteSample, caught_up_minute

    def minute(n: int, pace: str) -> MinuteSample:
        return MinuteSample(
            minute=n, produced=0, rows=0, expected_unique=0, latency_p50_ms=None, latency_p95_ms=None,
            rows_visible=0, batches=0, batch_p50_ms=None, batch_max_ms=None, lag=None, state_keys=None,
            state_memory_bytes=None, state_disk_bytes=None, heap_used_bytes=None, rss_bytes=None,
            jvm_rss_bytes=None, restarts=0, pace=pace,
        )  # fmt: skip

    paces = ["keeping_up", "behind", "catching_up", "keeping_up", "keeping_up"]
    assert caught_up_minute([minute(i + 1, p) for i, p in enumerate(paces)]) == 4
    assert caught_up_minute([minute(1, "keeping_up"), minute(2, "behind")]) is None


def test_the_state_stores_commit_and_upload_per_batch_come_from_the_batches_phases():
    batches = [
        {"phases_ms": {"addBatch": 900, "state_commit": 300, "rocksdb_file_sync": 200}},
        {"phases_ms": {"addBatch": 800, "state_commit": 100, "rocksdb_file_sync": 40}},
        {"phases_ms": {"addBatch": 700}},  # a batch before the state store reported (or a job without one)
    ]
    assert soak_series.phase_per_batch(batches, "state_commit") == (400, 300)
    assert soak_series.phase_per_batch(batches, "rocksdb_file_sync") == (240, 200)
    assert soak_series.phase_per_batch(batches[2:], "state_commit") == (None, None)
    minute = sample(
        1, batches=2, state_commit_total_ms=400, state_commit_p95_ms=300, state_upload_total_ms=240,
        state_upload_p95_ms=200,
    )  # fmt: skip
    assert minute.state_commit_mean_ms == 200 and minute.state_upload_mean_ms == 120
    assert soak_series.minute_line(minute).endswith("| state commit 200 ms/batch (p95 300), upload 120 ms (p95 200)")
    assert "state commit" not in soak_series.minute_line(sample(1))


def test_the_summary_gives_the_state_commit_per_batch_over_the_last_third():
    samples = [
        sample(m, batches=60, state_commit_total_ms=60 * 100 * m, state_commit_p95_ms=150 * m) for m in range(1, 7)
    ]
    samples.append(sample(7, batches=40, state_commit_total_ms=40 * 700, state_commit_p95_ms=900))
    verdict = soak_series.rows_verdict(rows=1, distinct_ids=1, unique_produced=1)
    last_third = soak_series.summarize(samples, verdict, {})["last_third"]
    assert last_third["minutes"] == [6, 7]
    # Every batch of the last third counts once: (60 x 600 + 40 x 700) / 100 ms, not the minutes' mean.
    assert last_third["state_commit_ms_per_batch"] == 640.0
    assert last_third["state_commit_p95_ms_worst_minute"] == 900
    assert last_third["state_upload_ms_per_batch"] is None  # not reported: no file sync in these batches


def test_a_minutes_batches_are_those_that_ended_in_it():
    short, long_one, later = {"batch_duration_ms": 800}, {"batch_duration_ms": 178_000}, {"batch_duration_ms": 900}
    batches = [(short, 60_100), (long_one, 1_000), (later, 119_500)]
    # The long batch started in the first minute and ended in the third; the last one ends after the second.
    assert soak_series.ended_within(batches, 60_000, 120_000) == [short]
    assert soak_series.ended_within(batches, 120_000, 180_000) == [long_one, later]
    assert soak_series.ended_within(batches, 0, 60_000) == []
