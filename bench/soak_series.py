"""The pure parts of bench/soak.py: one minute's sample, its printed line, latency percentiles from histograms,
the exact-rows verdict, the run's summary against the steady-state targets, and its CSV, JSON and plot.

No service is reached here (tests/bench/test_soak_series.py runs in the fast tier).

Latency is kept as a histogram per minute (LATENCY_BUCKET_MS wide buckets, counted by ClickHouse): the minute's
p50/p95 come from it, and the last third's p95 from the merged histograms of its minutes (a p95 of p95s would not
be one).
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

LATENCY_BUCKET_MS = 10
# The steady-state target: p95 produced -> visible over the last third at most this.
P95_TARGET_MS = 2000
# A series is "flat" (RSS) or "not growing" (p95) when its least-squares line rises by at most this share of its
# mean over the span measured: noise of a few percent passes, a steady climb does not.
FLAT_TOLERANCE = 0.10

Histogram = Mapping[int, int]  # bucket (latency // LATENCY_BUCKET_MS) -> rows


def merge_histograms(histograms: Iterable[Histogram]) -> dict[int, int]:
    merged: dict[int, int] = {}
    for histogram in histograms:
        for bucket, count in histogram.items():
            merged[bucket] = merged.get(bucket, 0) + count
    return merged


def histogram_percentile(histogram: Histogram, q: float) -> int | None:
    """The q-quantile (0 < q <= 1) in ms: the upper edge of the bucket that holds the row of rank ceil(q * n), so
    at most one bucket above the exact figure, never below it. None when empty."""
    total = sum(histogram.values())
    if total == 0:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for bucket in sorted(histogram):
        seen += histogram[bucket]
        if seen >= rank:
            return (bucket + 1) * LATENCY_BUCKET_MS
    raise AssertionError("unreachable: the ranks add up to the total")


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank q-quantile of plain values (batch durations); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


@dataclass
class MinuteSample:
    """What bench/soak.py measured in one minute of the run (None: not measurable then, e.g. no job running)."""

    minute: int
    produced: int  # events sent in this minute (re-sends included)
    rows: int  # rows in the ClickHouse table at the end of the minute
    expected_unique: int  # unique ids produced up to the end of the minute
    latency_p50_ms: int | None
    latency_p95_ms: int | None
    rows_visible: int  # rows that became visible in this minute (the histogram's total)
    batches: int
    batch_p50_ms: float | None
    batch_max_ms: float | None
    lag: int | None  # records behind the topics' end, as the worker read it from the brokers (the pipeline's pace)
    state_keys: int | None  # the dedup operator's numRowsTotal, from the job's latest metrics
    state_memory_bytes: int | None  # its memoryUsedBytes
    state_disk_bytes: int | None  # du of the checkpoint's state directory
    heap_used_bytes: int | None  # jstat -gc of the job's JVM
    rss_bytes: int | None  # the job's process tree: supervisor, Python driver, JVM, Python workers
    jvm_rss_bytes: int | None
    restarts: int
    load_avg_1m: float = 0.0
    # The minute's slowest batch: its three longest phases (the job's phases_ms), e.g. "addBatch 5100 ms,
    # state_commit 4200 ms, rocksdb_write_stall 3900 ms": what a latency spike waited for.
    slowest_batch_phases: str = ""
    # Cores each component used over the minute (bench/cpu_watch.py): the job (its JVM, and the JVM's RocksDB,
    # task, JIT and GC threads within it), ClickHouse, the broker, the bench's producer...: what a slow batch may
    # have waited for.
    cpu_cores: str = ""
    # The pipeline's pace at the end of the minute, as its page says it (clearflow_spec.pace): keeping_up, catching_up,
    # behind; and its re-sizes so far (runs that ended "resized").
    pace: str = ""
    resizes: int = 0
    # The state store's commit per batch (the job's phases_ms, summed over the minute's batches, and the slowest
    # but 5%): `state_commit` is the whole commit (Spark's commitTimeMs), `state_upload` its part that syncs
    # RocksDB's files to the checkpoint's storage (rocksdb_file_sync: to S3 when the checkpoint is there).
    state_commit_total_ms: int | None = None
    state_commit_p95_ms: float | None = None
    state_upload_total_ms: int | None = None
    state_upload_p95_ms: float | None = None
    histogram: dict[int, int] = field(default_factory=dict, repr=False)

    @property
    def rate(self) -> float:
        return self.produced / 60

    @property
    def state_commit_mean_ms(self) -> float | None:
        return self.state_commit_total_ms / self.batches if self.state_commit_total_ms is not None else None

    @property
    def state_upload_mean_ms(self) -> float | None:
        return self.state_upload_total_ms / self.batches if self.state_upload_total_ms is not None else None


def heap_used_bytes(jstat_output: str) -> int | None:
    """Heap used from `jstat -gc` (KB columns): survivors, eden and old generation."""
    rows = [line.split() for line in jstat_output.splitlines() if line.strip()]
    if len(rows) < 2:
        return None
    row = dict(zip(rows[0], rows[1], strict=False))
    try:
        return round(sum(float(row[name]) for name in ("S0U", "S1U", "EU", "OU")) * 1024)
    except (KeyError, ValueError):
        return None


# The CSV's columns: every field but the histogram (kept in the JSON).
CSV_FIELDS = [f.name for f in fields(MinuteSample) if f.name != "histogram"]


LONGEST_BATCH_MS = 15 * 60_000  # a minute's batches are looked for among those that started this long before it


def ended_within(batches: Iterable[tuple[Mapping[str, Any], float]], start_ms: int, end_ms: int) -> list[Mapping]:
    """The batches (a metrics record and its start, unix ms, as the history scores it) that ended in [start_ms,
    end_ms): a record is written when its batch ends, so a batch longer than the wait after its minute (a job
    behind, a first batch) is counted in the minute it ended in, not missed in the one it started in."""
    return [
        record
        for record, started_ms in batches
        if start_ms <= started_ms + int(record.get("batch_duration_ms") or 0) < end_ms
    ]


STATE_COMMIT_PHASE, STATE_UPLOAD_PHASE = "state_commit", "rocksdb_file_sync"  # spark_jobs.metrics' names


def phase_per_batch(batches: Sequence[Mapping[str, Any]], phase: str) -> tuple[int | None, float | None]:
    """(total ms, nearest-rank p95 ms) of one of the batches' phases_ms; (None, None) when no batch has it."""
    times = [int(b["phases_ms"][phase]) for b in batches if phase in (b.get("phases_ms") or {})]
    if not times:
        return None, None
    return sum(times), percentile(times, 0.95)


def slowest_phases(batches: Sequence[Mapping[str, Any]], top: int = 3) -> str:
    """The `top` longest phases of the slowest of `batches` (job metrics records), in words; "" without any."""
    if not batches:
        return ""
    slowest = max(batches, key=lambda b: int(b.get("batch_duration_ms") or 0))
    phases: dict[str, int] = slowest.get("phases_ms") or {}
    longest = sorted(phases.items(), key=lambda item: -int(item[1]))[:top]
    return ", ".join(f"{name} {int(ms)} ms" for name, ms in longest)


def _num(value: float | None, scale: float = 1.0, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value / scale:,.{digits}f}"


def minute_line(sample: MinuteSample) -> str:
    """The line printed for a minute: rows, latency, batches, state, memory, restarts."""
    mib = 2**20
    return (
        f"min {sample.minute:>3} | {sample.rate:>7,.0f} ev/s | rows {sample.rows:>12,} of {sample.expected_unique:>12,}"
        f" | p50 {_num(sample.latency_p50_ms):>6} ms p95 {_num(sample.latency_p95_ms):>6} ms"
        f" | batch p50 {_num(sample.batch_p50_ms):>6} ms max {_num(sample.batch_max_ms):>6} ms ({sample.batches})"
        f" | lag {_num(sample.lag):>9}"
        f" | state {_num(sample.state_keys):>12} keys {_num(sample.state_disk_bytes, mib):>6} MB disk"
        f" | heap {_num(sample.heap_used_bytes, mib):>6} MB rss {_num(sample.rss_bytes, mib):>6} MB"
        f" | restarts {sample.restarts}"
        + (f" | {sample.pace}" if sample.pace else "")
        + (f" | re-sized {sample.resizes}" if sample.resizes else "")
        + (f" | cores: {sample.cpu_cores}" if sample.cpu_cores else "")
        + _state_commit_words(sample)
    )


def _state_commit_words(sample: MinuteSample) -> str:
    if sample.state_commit_mean_ms is None:
        return ""
    words = f" | state commit {_num(sample.state_commit_mean_ms)} ms/batch (p95 {_num(sample.state_commit_p95_ms)})"
    if sample.state_upload_mean_ms is not None:
        words += f", upload {_num(sample.state_upload_mean_ms)} ms (p95 {_num(sample.state_upload_p95_ms)})"
    return words


@dataclass(frozen=True)
class RowsVerdict:
    exact: bool
    words: str


def rows_verdict(*, rows: int, distinct_ids: int, unique_produced: int) -> RowsVerdict:
    """Exactly the unique events in ClickHouse: every id once (no doubles), none missing, none extra."""
    problems = []
    if rows > distinct_ids:
        problems.append(f"{rows - distinct_ids:,} rows written twice")
    if distinct_ids < unique_produced:
        problems.append(f"{unique_produced - distinct_ids:,} unique events missing")
    if distinct_ids > unique_produced:
        problems.append(f"{distinct_ids - unique_produced:,} ids that were never produced")
    if not problems:
        return RowsVerdict(True, f"exact: {rows:,} rows, the {unique_produced:,} unique events, each once")
    return RowsVerdict(
        False,
        f"not exact: {rows:,} rows, {distinct_ids:,} distinct ids, {unique_produced:,} unique produced: "
        + "; ".join(problems),
    )


def slope_per_minute(values: Sequence[float]) -> float | None:
    """Least-squares slope of a series sampled once a minute; None under two points."""
    n = len(values)
    if n < 2:
        return None
    mean_x = (n - 1) / 2
    mean_y = sum(values) / n
    num = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return num / den


def rises(values: Sequence[float], tolerance: float = FLAT_TOLERANCE) -> bool | None:
    """Whether the series climbs: its fitted line rises by more than `tolerance` of its mean over the span.
    None under two points."""
    slope = slope_per_minute(values)
    if slope is None:
        return None
    mean = sum(values) / len(values)
    return slope * (len(values) - 1) > tolerance * abs(mean) if mean else slope > 0


def last_third(samples: Sequence[MinuteSample]) -> list[MinuteSample]:
    return list(samples[len(samples) - max(1, len(samples) // 3) :]) if samples else []


def summarize(samples: Sequence[MinuteSample], verdict: RowsVerdict, settings: Mapping[str, object]) -> dict:
    """The run against the steady-state targets: restarts, exact rows, last third's p95 (and whether it grows), RSS
    flat over the last third."""
    tail = last_third(samples)
    merged = merge_histograms(s.histogram for s in tail)
    p95s = [float(s.latency_p95_ms) for s in tail if s.latency_p95_ms is not None]
    rss = [float(s.rss_bytes) for s in tail if s.rss_bytes is not None]
    p95 = histogram_percentile(merged, 0.95)
    restarts = samples[-1].restarts if samples else 0
    resizes = samples[-1].resizes if samples else 0
    produced = sum(s.produced for s in samples)
    caught_up = caught_up_minute(samples)
    checks = {
        # A re-size is a restart the product chose, from the checkpoint; any other restart is a failure.
        "no_restarts": restarts - resizes == 0,
        "exact_rows": verdict.exact,
        "p95_last_third_within_target": p95 is not None and p95 <= P95_TARGET_MS,
        "p95_not_growing": _negated(rises(p95s)),
        "rss_flat_last_third": _negated(rises(rss)),
    }
    return {
        "settings": dict(settings),
        "minutes": len(samples),
        "events_produced": produced,
        "achieved_rate": round(produced / (60 * len(samples))) if samples else 0,
        "rows": verdict.words,
        "restarts": restarts,
        "resizes": resizes,
        # The first minute from which the pipeline kept up to the end (its pace, read from the brokers): how long
        # a ramp or a backlog took to be caught up with.
        "caught_up_at_minute": caught_up,
        "last_third": {
            "minutes": [s.minute for s in tail],
            "latency_p50_ms": histogram_percentile(merged, 0.50),
            "latency_p95_ms": p95,
            "latency_p99_ms": histogram_percentile(merged, 0.99),
            "p95_slope_ms_per_min": _rounded(slope_per_minute(p95s)),
            "rss_slope_mb_per_min": _rounded(_scaled(slope_per_minute(rss), 2**20)),
            "rss_max_mb": round(max(rss) / 2**20) if rss else None,
            **state_commit_summary(tail),
        },
        "peak": {
            "rss_mb": _max_mb(s.rss_bytes for s in samples),
            "heap_used_mb": _max_mb(s.heap_used_bytes for s in samples),
            "state_disk_mb": _max_mb(s.state_disk_bytes for s in samples),
            "state_keys": max((s.state_keys for s in samples if s.state_keys is not None), default=None),
            "batch_ms": max((s.batch_max_ms for s in samples if s.batch_max_ms is not None), default=None),
        },
        "checks": checks,  # None: not measurable (a last third of one minute has no trend)
        "targets_met": all(value is True for value in checks.values()),
    }


def state_commit_summary(samples: Sequence[MinuteSample]) -> dict[str, float | None]:
    """The state store's commit and upload per batch over `samples`: the mean (every batch's time over the batches
    that had it) and the worst minute's p95."""

    def mean(totals: list[tuple[int | None, int]]) -> float | None:
        had = [(total, batches) for total, batches in totals if total is not None]
        batches = sum(b for _, b in had)
        return round(sum(t for t, _ in had) / batches, 1) if batches else None

    def worst(values: Iterable[float | None]) -> float | None:
        return max((v for v in values if v is not None), default=None)

    return {
        "state_commit_ms_per_batch": mean([(s.state_commit_total_ms, s.batches) for s in samples]),
        "state_commit_p95_ms_worst_minute": worst(s.state_commit_p95_ms for s in samples),
        "state_upload_ms_per_batch": mean([(s.state_upload_total_ms, s.batches) for s in samples]),
        "state_upload_p95_ms_worst_minute": worst(s.state_upload_p95_ms for s in samples),
    }


def caught_up_minute(samples: Sequence[MinuteSample]) -> int | None:
    """The first minute from which every minute's pace was keeping up (None: it never stayed so, or no pace)."""
    first = None
    for sample in samples:
        if sample.pace != "keeping_up":
            first = None
        elif first is None:
            first = sample.minute
    return first


def _negated(value: bool | None) -> bool | None:
    return None if value is None else not value


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else value / scale


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _max_mb(values: Iterable[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return round(max(present) / 2**20) if present else None


def write_outputs(out: Path, samples: Sequence[MinuteSample], summary: dict) -> list[Path]:
    """summary.json (the summary and every minute, histograms included), minutes.csv and the plot."""
    out.mkdir(parents=True, exist_ok=True)
    summary_path = out / "summary.json"
    summary_path.write_text(
        json.dumps({**summary, "series": [asdict(s) for s in samples]}, indent=2, default=str) + "\n"
    )
    return [summary_path, write_csv(out, samples), plot(out / "soak.png", samples, title=_title(summary))]


def write_csv(out: Path, samples: Sequence[MinuteSample]) -> Path:
    """minutes.csv: a line per minute (written again each minute, so a run cut short still leaves its series)."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "minutes.csv"
    with open(csv_path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for sample in samples:
            writer.writerow(asdict(sample))
    return csv_path


def _title(summary: Mapping) -> str:
    settings = summary.get("settings", {})
    return (
        f"bench/soak.py: {settings.get('rate', '?')} ev/s, window {settings.get('window', '?')}, "
        f"{settings.get('time', '?')} time, {summary.get('minutes', 0)} min"
    )


def plot(path: Path, samples: Sequence[MinuteSample], *, title: str) -> Path:
    """Six panels, one per series, against the minute (a PNG)."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    mib = 2**20
    minutes = [s.minute for s in samples]

    def series(name: str, scale: float = 1.0) -> list[float]:
        return [math.nan if getattr(s, name) is None else getattr(s, name) / scale for s in samples]

    # Per panel: (title, series on the left axis, series on a right axis of their own); a series is
    # (label, field, divisor).
    panels = [
        ("Rows in ClickHouse (millions)", [("rows", "rows", 1e6), ("unique produced", "expected_unique", 1e6)], []),
        ("Produced -> visible (ms)", [("p50", "latency_p50_ms", 1), ("p95", "latency_p95_ms", 1)], []),
        (
            "Micro-batch duration, state commit per batch (ms)",
            [
                ("batch p50", "batch_p50_ms", 1),
                ("batch max", "batch_max_ms", 1),
                ("state commit (mean)", "state_commit_mean_ms", 1),
                ("of it, upload (mean)", "state_upload_mean_ms", 1),
            ],
            [],
        ),
        ("Dedup state", [("keys (millions)", "state_keys", 1e6)], [("on disk (MB)", "state_disk_bytes", mib)]),
        (
            "Job memory (MB)",
            [("RSS", "rss_bytes", mib), ("JVM RSS", "jvm_rss_bytes", mib), ("heap", "heap_used_bytes", mib)],
            [],
        ),
        ("Rate and restarts", [("produced (events/s)", "produced", 60)], [("restarts", "restarts", 1)]),
    ]
    figure, axes = plt.subplots(2, 3, figsize=(15, 8), sharex=True)
    colors = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"] * 2)
    axes[0][1].axhline(P95_TARGET_MS, color="grey", linestyle="--", linewidth=0.8)  # the p95 target
    right_axis = None
    for ax, (heading, left, right) in zip(axes.flat, panels, strict=True):
        right_axis = ax.twinx() if right else None
        handles = []
        for axis, lines in ((ax, left), (right_axis, right)):
            if axis is None:
                continue
            highest = P95_TARGET_MS if ax is axes[0][1] else 0.0  # the target line stays in view
            for label, name, scale in lines:
                values = series(name, scale)
                handles += axis.plot(minutes, values, marker=".", label=label, color=next(colors))
                highest = max([highest, *(v for v in values if not math.isnan(v))])
            axis.set_ylim(0, highest * 1.08 or 1)
        ax.set_title(heading, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(handles=handles, fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if right_axis is not None:  # the last panel's: restarts, a whole number
        right_axis.yaxis.set_major_locator(MaxNLocator(integer=True))
        right_axis.set_ylim(0, max([1, *(s.restarts for s in samples)]) * 1.08)
    axes[1][1].set_xlabel("minute")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


def state_disk_bytes(checkpoints: Path) -> int | None:
    """Bytes on disk of every `state` directory under the checkpoints (the dedup state Spark keeps). A file with
    several names (the state store's uploads are hard links, and one file can be uploaded under two names) is
    counted once."""
    total, found, seen = 0, False, set()
    for root, dirs, files in os.walk(checkpoints):
        if Path(root).name == "state" or "/state/" in f"{root}/":
            found = True
            for name in files:
                with contextlib.suppress(OSError):
                    status = os.stat(os.path.join(root, name))
                    if (status.st_dev, status.st_ino) not in seen:
                        seen.add((status.st_dev, status.st_ino))
                        total += status.st_blocks * 512
        dirs.sort()
    return total if found else None
