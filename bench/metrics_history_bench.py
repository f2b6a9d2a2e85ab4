"""Metrics history benchmark (run by hand, not a test).

    .venv/bin/python bench/metrics_history_bench.py

Against a private redis-server on a free port: the median time of `MetricsPublisher.publish` with the history
(sorted set + totals) and without it (the latest record and the recent list only), alternating twice, 2,000
publishes each; then the memory of one pipeline's history at the retention limit (HISTORY_MAX_RECORDS).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import redis

from localstack import processes, service_defs
from spark_jobs.metrics import HISTORY_MAX_RECORDS, BatchMetrics, MetricsPublisher, history_key

PUBLISHES = 2_000


def record(i: int) -> BatchMetrics:
    return BatchMetrics(
        pipeline="bench",
        batch_id=i,
        timestamp=f"2026-11-23T{10 + i // 3600:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z",
        input_rows=1000 + i % 7,
        duplicates_dropped=90,
        rows_written=900,
        dead_letters=i % 3,
        filtered_out=5,
        batch_duration_ms=400,
        lag={"orders": {"0": 10, "1": 20}},
        total_lag=30,
        input_rows_per_second=2000.0,
    )


def median_publish_us(url: str, name: str, *, history: bool) -> float:
    publisher = MetricsPublisher(name, url)
    if not history:
        publisher._add_to_history = lambda *args, **kwargs: None  # the publish step as it was before
    publisher.publish(record(0))  # connect
    times = []
    for i in range(1, PUBLISHES + 1):
        started = time.perf_counter()
        publisher.publish(record(i))
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="cf-bench-"))
    with processes.ProcessGroup(work / "logs") as group:
        port = processes.free_port()
        group.start(service_defs.redis(port=port, data_dir=work))
        url = f"redis://127.0.0.1:{port}/0"
        runs: dict[bool, list[float]] = {False: [], True: []}
        for round_ in range(2):
            for history in (False, True):
                runs[history].append(median_publish_us(url, f"bench-{history}-{round_}", history=history))
        for history, values in runs.items():
            label = "with history   " if history else "without history"
            print(f"{label}: median publish {statistics.median(values):.0f} us (runs {values[0]:.0f}, {values[1]:.0f})")
        full = MetricsPublisher("bench-full", url)
        for i in range(HISTORY_MAX_RECORDS + 500):
            full.publish(record(i))
        client = redis.Redis.from_url(url)
        key = history_key("bench-full")
        print(f"history at the limit: {client.zcard(key)} records, {client.memory_usage(key)} bytes in Redis")
        client.close()


if __name__ == "__main__":
    main()
