"""Latency mode of bench/engine_bench.py (`--latency`): event produced -> row visible in ClickHouse.

    .venv/bin/python bench/engine_bench.py --latency --rate 20000 --seconds 120 --runs 3

The job (`python -m spark_jobs.run`, dedup with a 1h window, exactly-once sink) runs on a short processing-time
trigger. Once it has written a first probe event, a producer sends `rate` events/s (10% duplicates) at a steady
pace for `warm-up + seconds`. Each row's latency is `visible_at - kafka_ts`:
- `kafka_ts` is the record's Kafka timestamp (CreateTime, set by the producer when `produce()` is called), written
  by the job from `_kafka_timestamp`;
- `visible_at` is `DEFAULT now64(3)` of the table: ClickHouse's clock when the insert that carried the row was
  written (the row is visible from then on).
Rows produced during the first WARMUP_SECONDS (the JIT compiling the hot code) are left out.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from bench_pipeline import JobProcess, bench_spec, job_argv

WARMUP_SECONDS = 20
DUP_RATIO = 0.10


def _event(k: int) -> bytes:
    return json.dumps(
        {
            "event_id": f"evt-{k:09d}",
            "user": {"id": str(uuid.UUID(int=k + 1))},
            "email": f"user{k % 5000}@example{k % 7}.com",
            "amount": round((k % 10000) / 7, 2),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    ).encode()


def steady_produce(bootstrap: str, topic: str, partitions: int, rate: int, seconds: float) -> tuple[int, int, float]:
    """Produce `rate` events/s for `seconds` (paced every 5 ms); returns (sent, unique keys, achieved rate)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    started = time.monotonic()
    sent = unique = 0
    while True:
        elapsed = time.monotonic() - started
        if elapsed >= seconds:
            break
        due = int(rate * elapsed) - sent
        for _ in range(due):
            # Every tenth event repeats a recent key: a duplicate the dedup drops.
            if sent % 10 == 9 and unique > 0:
                k = max(0, unique - 1 - (sent * 7919) % min(unique, 50_000))
            else:
                k = unique
                unique += 1
            producer.produce(topic, _event(k), partition=sent % partitions)
            sent += 1
        producer.poll(0)
        time.sleep(0.005)
    achieved = sent / (time.monotonic() - started)
    assert producer.flush(60) == 0
    return sent, unique, achieved


def run(
    *,
    bootstrap: str,
    clickhouse: tuple[str, int],
    client: Any,
    partitions: int,
    rate: int,
    seconds: int,
    trigger_interval: str,
    workdir: Path,
    label: str,
    spark_conf: list[str],
    services: dict[str, int],
) -> dict:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"latency-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept referenced until the topic exists
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    kafka_ts = ("_kafka_timestamp", "kafka_ts", "DateTime64(3, 'UTC')")
    spec = bench_spec(
        topic=topic,
        bootstrap=bootstrap,
        clickhouse=clickhouse,
        dedup=True,
        max_records_per_batch=500_000,
        extra_columns=(kafka_ts,),
    )
    table = spec["sink"]["table"]
    # The table the job would create, plus the time each row became visible.
    client.command(
        f"CREATE TABLE {table} (event_id String, user_id UUID, email String, amount Float64, "
        "created_at DateTime64(3, 'UTC'), kafka_ts DateTime64(3, 'UTC'), "
        "visible_at DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = MergeTree ORDER BY event_id "
        "SETTINGS non_replicated_deduplication_window = 1000"
    )
    spec_file = workdir / f"{label}.json"
    spec_file.write_text(json.dumps(spec))
    log_file = workdir / f"{label}.log"
    argv = [*job_argv(spec_file, workdir / f"{label}-checkpoint", spark_conf), "--trigger-interval", trigger_interval]
    job = JobProcess(argv, log_file, dict(os.environ), services)
    try:
        from confluent_kafka import Producer

        probe = Producer({"bootstrap.servers": bootstrap})
        probe.produce(topic, _event(10**9 - 1), partition=0)
        probe.flush(30)
        deadline = time.monotonic() + 600
        while client.command(f"SELECT count() FROM {table}") < 1:
            if job.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{label}: the job did not start; see {log_file}")
            time.sleep(0.5)
        load_before = os.getloadavg()[0]
        measure_from = time.time() + WARMUP_SECONDS
        sent, unique, achieved = steady_produce(bootstrap, topic, partitions, rate, WARMUP_SECONDS + seconds)
        load_after = os.getloadavg()[0]
        deadline = time.monotonic() + 600
        while client.command(f"SELECT count() FROM {table}") < unique + 1:
            if job.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{label}: not every event arrived; see {log_file}")
            time.sleep(0.5)
    finally:
        if job.process.poll() is None:
            os.killpg(job.process.pid, signal.SIGTERM)
        job.wait(timeout=300)
    p50, p95, p99, worst, rows = client.query(
        "SELECT quantilesExact(0.5, 0.95, 0.99)(d)[1], quantilesExact(0.5, 0.95, 0.99)(d)[2], "
        "quantilesExact(0.5, 0.95, 0.99)(d)[3], max(d), count() FROM "
        f"(SELECT dateDiff('millisecond', kafka_ts, visible_at) AS d FROM {table} "
        "WHERE kafka_ts >= fromUnixTimestamp64Milli({t:Int64}))",
        parameters={"t": int(measure_from * 1000)},
    ).result_rows[0]
    batches = [
        json.loads(line.split("clearflow.metrics ", 1)[1])
        for line in log_file.read_text(errors="replace").splitlines()
        if "clearflow.metrics {" in line
    ]
    durations = [b["batch_duration_ms"] for b in batches if b["input_rows"] > 0]
    return {
        "label": label,
        "rate_target": rate,
        "rate_achieved": round(achieved),
        "events_sent": sent,
        "rows_measured": rows,
        "latency_ms": {"p50": p50, "p95": p95, "p99": p99, "max": worst},
        "p50_batch_ms": statistics.median(durations) if durations else None,
        "batches": len(durations),
        "peak_rss_mb": round(job.peak / 2**20),
        "cpu_s_by_component": job.cpu_by_component(),
        "load_avg_1m_before_after": [round(load_before, 2), round(load_after, 2)],
    }


def summarize(runs: list[dict]) -> dict:
    return {
        "runs": len(runs),
        **{q: statistics.median(r["latency_ms"][q] for r in runs) for q in ("p50", "p95", "p99")},
        "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
        "rate_achieved": statistics.median(r["rate_achieved"] for r in runs),
        "load_avg_1m": [r["load_avg_1m_before_after"] for r in runs],
    }
