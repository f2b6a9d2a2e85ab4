"""Engine benchmark (run by hand, not a test).

    .venv/bin/python bench/engine_bench.py --events 2000000 --partitions 2

Pre-loads N JSON events (10% duplicates) into a fresh topic, then, in the same run:
1. the raw confluent-kafka consume rate of that topic (one consumer, all partitions: the ceiling);
2. the pipeline with dedup (1h window) as `python -m spark_jobs.run --available-now` until it has caught up;
3. the same pipeline with dedup off.
4. the ingest ceiling: the job's source and parse only, into Spark's noop sink (bench/ingest_ceiling.py).
For 2 to 4: end-to-end events/s (first micro-batch start to the end of the last one that read events, from
the job's metrics lines; the wall time including Spark's start is reported too), p50/p95 micro-batch
duration, peak RSS of the job's whole process tree (driver, JVM, Python workers), the CPU seconds each
component used (the JVM, the Python workers, the broker, ClickHouse), and a ClickHouse row-count check.

--runs N repeats everything on a fresh topic and prints medians.
--vs-code DIR adds, right after each run's dedup job, the same dedup job run with the engine of another checkout
(`PYTHONPATH=DIR`: its `spark_jobs`, this venv's jars), on the same topic; the paired ratio (this code / DIR's)
per run and its median are printed: `--vs-code <export of main before a change> --runs 3 --skip-no-dedup
--skip-ceiling` is the before/after comparison of a change in one run, alternated.
(The before/after comparison with the first engine's Python source, `--sources python,native`, ran at commit
09eb563; see docs/performance.md.)
--latency measures produce -> visible-in-ClickHouse latency under a steady load instead (bench/latency.py).

Starts its own Apache Kafka broker and ClickHouse (chDB) unless --bootstrap/--clickhouse are given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from bench_pipeline import REPO, JobProcess, bench_spec, job_argv, log, patient


def make_events(n: int, dup_ratio: float) -> list[bytes]:
    unique = int(n * (1 - dup_ratio))
    base = int(time.time() * 1000)
    events = []
    for i in range(n):
        k = i if i < unique else (i * 7919) % unique
        events.append(
            json.dumps(
                {
                    "event_id": f"evt-{k:09d}",
                    "user": {"id": str(uuid.UUID(int=k + 1))},
                    "email": f"user{k % 5000}@example{k % 7}.com",
                    "amount": round((k % 10000) / 7, 2),
                    "created_at": datetime.fromtimestamp((base + i) / 1000, UTC).isoformat(),
                }
            ).encode()
        )
    # Spread the duplicates over the stream instead of putting them all at the end.
    import random

    random.Random(42).shuffle(events)
    return events


def preload(bootstrap: str, topic: str, partitions: int, events: list[bytes]) -> float:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    started = time.monotonic()
    for i, value in enumerate(events):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    return time.monotonic() - started


def raw_consume_rate(bootstrap: str, topic: str, partitions: int, expected: int) -> float:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-raw-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.max.bytes": 64 * 1024 * 1024,
            "max.partition.fetch.bytes": 16 * 1024 * 1024,
            "queued.min.messages": 200_000,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    count = 0
    size = 0
    eof: set[int] = set()
    started = time.monotonic()
    while len(eof) < partitions or count < expected:
        for message in consumer.consume(10_000, 1.0):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    eof.add(message.partition())
                continue
            size += len(message.value())
            count += 1
        if time.monotonic() - started > 600:
            break
    elapsed = time.monotonic() - started
    consumer.close()
    assert count == expected, f"raw consumer read {count} of {expected}"
    return count / elapsed


def metrics_records(text: str) -> list[dict]:
    return [
        json.loads(line.split("clearflow.metrics ", 1)[1])
        for line in text.splitlines()
        if "clearflow.metrics {" in line
    ]


def run_job(
    spec: dict,
    workdir: Path,
    label: str,
    spark_conf: list[str],
    services: dict[str, int],
    *,
    ceiling: bool = False,
    code: str | None = None,
) -> dict:
    spec_file = workdir / f"{label}.json"
    spec_file.write_text(json.dumps(spec))
    log_file = workdir / f"{label}.log"
    argv = [*job_argv(spec_file, workdir / f"{label}-checkpoint", spark_conf, ceiling=ceiling), "--available-now"]
    started = time.monotonic()
    env = dict(os.environ)
    if code:  # another checkout's engine, on this venv
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [code, env.get("PYTHONPATH")]))
    job = JobProcess(argv, log_file, env, services)
    code = job.wait()
    wall = time.monotonic() - started
    text = log_file.read_text(errors="replace")
    if code != 0:
        raise SystemExit(f"{label}: job exited with {code}; see {log_file}\n{text[-3000:]}")
    # Only batches that read events: with dedup, Spark ends with a no-data batch that only evicts state
    # (2-6 s here), after every row is already in ClickHouse.
    records = [r for r in metrics_records(text) if r["input_rows"] > 0]
    durations = [r["batch_duration_ms"] for r in records]
    starts = [datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")).timestamp() for r in records]
    ends = [s + r["batch_duration_ms"] / 1000 for s, r in zip(starts, records, strict=True)]
    rows_in = sum(r["input_rows"] for r in records)
    span = max(ends) - min(starts)
    # The first micro-batch includes the JIT's (and the Python workers') warm-up; report both.
    steady_records = records[1:]
    steady_span = max(ends) - min(starts[1:]) if len(records) > 1 else span
    return {
        "label": label,
        "input_rows": rows_in,
        "rows_written": sum(r["rows_written"] for r in records),
        "duplicates_dropped": sum(r["duplicates_dropped"] for r in records),
        "batches": len(durations),
        "events_per_s": rows_in / span,
        "events_per_s_after_first_batch": sum(r["input_rows"] for r in steady_records) / steady_span
        if steady_records
        else rows_in / span,
        "p50_batch_ms": statistics.median(durations),
        "p95_batch_ms": sorted(durations)[max(0, round(0.95 * len(durations)) - 1)],
        "first_batch_ms": durations[0],
        "wall_s_including_spark_start": wall,
        "peak_rss_mb": job.peak / 2**20,
        "cpu_s_by_component": job.cpu_by_component(),
    }


def summarize(raw_rates: list[float], results: list[dict]) -> dict:
    """Medians over the runs, per job, with each figure's ratio to the raw consume of its own run."""
    summary: dict[str, dict] = {"raw_consume_events_per_s": {"median": round(statistics.median(raw_rates))}}
    for label in sorted({r["label"].split("#")[0] for r in results}):
        runs = [r for r in results if r["label"].split("#")[0] == label]
        summary[label] = {
            "runs": len(runs),
            "events_per_s": round(statistics.median(r["events_per_s"] for r in runs)),
            "events_per_s_after_first_batch": round(
                statistics.median(r["events_per_s_after_first_batch"] for r in runs)
            ),
            "ratio_to_raw": round(statistics.median(r["ratio_to_raw"] for r in runs), 3),
            "p50_batch_ms": statistics.median(r["p50_batch_ms"] for r in runs),
            "peak_rss_mb": round(statistics.median(r["peak_rss_mb"] for r in runs)),
            "load_avg_1m": [r["load_avg_1m_before_after"] for r in runs],
        }
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--dup-ratio", type=float, default=0.10)
    parser.add_argument("--max-records-per-batch", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=1, help="repeat everything (a fresh topic each time)")
    parser.add_argument("--bootstrap", help="use this broker instead of starting Apache Kafka")
    parser.add_argument("--clickhouse", help="host:port of ClickHouse HTTP instead of starting chDB")
    parser.add_argument("--skip-no-dedup", action="store_true")
    parser.add_argument("--vs-code", metavar="DIR", help="also run the dedup job with DIR's spark_jobs (paired)")
    parser.add_argument("--skip-ceiling", action="store_true", help="do not measure the ingest ceiling")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    parser.add_argument("--latency", action="store_true", help="latency mode (see bench/latency.py) instead")
    parser.add_argument("--rate", type=int, default=20_000, help="latency mode: events/s produced")
    parser.add_argument("--seconds", type=int, default=120, help="latency mode: how long to produce")
    parser.add_argument("--trigger-interval", default="250 milliseconds", help="latency mode: the job's trigger")
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    from localstack import processes, service_defs

    workdir = Path(tempfile.mkdtemp(prefix="clearflow-bench-"))
    services: dict[str, int] = {}  # the services this run started: their CPU time is reported per job
    with processes.ProcessGroup(workdir / "logs") as group:
        bootstrap = args.bootstrap
        if not bootstrap:
            port = processes.free_port()
            services["broker"] = group.start(
                patient(service_defs.kafka_broker(port=port, data_dir=Path(tempfile.mkdtemp(prefix="bench-kafka-"))))
            ).process.pid
            bootstrap = f"127.0.0.1:{port}"
        if args.clickhouse:
            ch_host, ch_port = args.clickhouse.rsplit(":", 1)
        else:
            ch_host, ch_port = "127.0.0.1", str(processes.free_port())
            clickhouse = group.start(patient(service_defs.clickhouse(port=int(ch_port), data_dir=workdir / "chdata")))
            services["clickhouse"] = clickhouse.process.pid
        ch_address = (ch_host, int(ch_port))

        import clickhouse_connect

        client = clickhouse_connect.get_client(host=ch_host, port=int(ch_port))

        if args.latency:
            import latency

            runs = []
            for run in range(args.runs):
                log(f"latency run {run + 1}/{args.runs}")
                result = latency.run(
                    bootstrap=bootstrap,
                    clickhouse=ch_address,
                    client=client,
                    partitions=args.partitions,
                    rate=args.rate,
                    seconds=args.seconds,
                    trigger_interval=args.trigger_interval,
                    workdir=workdir,
                    label=f"latency#{run}",
                    spark_conf=args.conf,
                    services=services,
                )
                log(json.dumps(result, indent=2))
                runs.append(result)
            print(json.dumps({"runs": runs, "summary": latency.summarize(runs)}, indent=2))
            return 0

        log(f"generating {args.events:,} events ({args.dup_ratio:.0%} duplicates)")
        events = make_events(args.events, args.dup_ratio)
        unique = len(set(json.loads(e)["event_id"] for e in events))
        avg_size = sum(len(e) for e in events) / len(events)

        raw_rates: list[float] = []
        results = []
        for run in range(args.runs):
            topic = f"bench-{uuid.uuid4().hex[:8]}"
            seconds = preload(bootstrap, topic, args.partitions, events)
            log(
                f"run {run + 1}: pre-loaded {args.events:,} events ({avg_size:.0f} B avg) "
                f"into {topic} in {seconds:.1f}s"
            )
            raw = raw_consume_rate(bootstrap, topic, args.partitions, args.events)
            raw_rates.append(raw)
            log(f"raw confluent-kafka consume: {raw:,.0f} events/s (load average {os.getloadavg()[0]:.2f})")
            labels = ("dedup", *(("dedup-vs",) if args.vs_code else ()), "no-dedup", "ingest-ceiling")
            for label in labels:
                if (label == "no-dedup" and args.skip_no_dedup) or (label == "ingest-ceiling" and args.skip_ceiling):
                    continue
                dedup = label.startswith("dedup")
                data = bench_spec(
                    topic=topic,
                    bootstrap=bootstrap,
                    clickhouse=ch_address,
                    dedup=dedup,
                    max_records_per_batch=args.max_records_per_batch,
                )
                log(f"running the pipeline ({label})")
                load_before = os.getloadavg()[0]
                result = run_job(
                    data,
                    workdir,
                    f"{label}#{run}",
                    args.conf,
                    services,
                    ceiling=label == "ingest-ceiling",
                    code=args.vs_code if label == "dedup-vs" else None,
                )
                result["load_avg_1m_before_after"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
                result["raw_consume_events_per_s"] = round(raw)
                result["ratio_to_raw"] = result["events_per_s"] / raw
                results.append(result)
                if label != "ingest-ceiling":
                    stored = client.command(f"SELECT count() FROM {data['sink']['table']}")
                    expected = unique if dedup else args.events
                    result["clickhouse_rows"] = stored
                    result["clickhouse_rows_expected"] = expected
                    assert stored == expected, f"{label}: ClickHouse holds {stored} rows, expected {expected}"
                log(json.dumps(result, indent=2))

        summary = {
            "events": args.events,
            "partitions": args.partitions,
            "avg_event_bytes": round(avg_size),
            "raw_consume_events_per_s": [round(r) for r in raw_rates],
            "runs": results,
            "medians": summarize(raw_rates, results),
            "cpu_count": os.cpu_count(),
        }
        if args.vs_code:
            pairs = [
                a["events_per_s"] / b["events_per_s"]
                for a, b in zip(
                    [r for r in results if r["label"].startswith("dedup#")],
                    [r for r in results if r["label"].startswith("dedup-vs#")],
                    strict=True,
                )
            ]
            summary["vs_code"] = {
                "code": args.vs_code,
                "paired_ratio_this_over_vs": [round(r, 3) for r in pairs],
                "median": round(statistics.median(pairs), 3),
            }
        print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
