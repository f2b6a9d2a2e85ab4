"""Per-stage profile of one micro-batch on the native path (run by hand, not a test).

    .venv/bin/python bench/stage_profile.py --events 500000 --rounds 3

Pre-loads N JSON events (bench/engine_bench.py's events: 187 B, 10% duplicates, 2 partitions) into a fresh
topic on its own Apache Kafka broker and ClickHouse (chDB), then in ONE SparkSession runs the pipeline's
cumulative prefixes on that same topic, each as a streaming query with a fresh checkpoint and one
available-now micro-batch holding every event:

  1. fetch      the Kafka source (`read_kafka`) into Spark's noop sink
  2. from_json  + `from_json` of the record (every field as text), nothing else
  3. parse      + the whole parse step instead (text -> typed values, parse dead-letter reasons, field watch)
  4. checks     + key/column checks, dedup time and key, dead-letter split (`pipeline.stream_steps`' "checks")
  5. dedup      + the JVM dedup processor (transformWithState, RocksDB state)
  6. handover   + map_columns and foreachBatch: mapInArrow hands every row to a Python worker as Arrow, which
                builds the table and the dead-letter split as the sink does, but inserts nothing
  7. insert     the job's own BatchWriter: + the ClickHouse inserts with their tokens

and, with `--stages ...,narrow`, one more prefix beside them: checks, then only the dedup processor's own columns
(key, error, order) through it. dedup - narrow is what the other columns cost in the dedup stage (the Row
encoders' round trip of every value, and their bytes through the shuffle and the sort).

Each prefix is timed twice: Spark's `addBatch` duration (wall) and the CPU seconds the job's process tree used
during the query (the JVM, Spark's Python workers; for the insert prefix ClickHouse's too, apart). On a shared
machine the CPU figure is the steadier one: wall time there measures the other processes as much as this one.

Prefixes 3-7 are `spark_jobs.pipeline.stream_steps`, so the profile measures the pipeline's own code. A stage's
cost is its prefix's batch time (Spark's `addBatch` duration) less the previous prefix's; the rounds rotate
nothing (a stage always follows the one before it), and the first round warms the JIT and the Python workers:
medians are over rounds 2.. (all rounds are printed). Commit: the walCommit + commitOffsets durations of the
insert prefix (the offsets log and the commit log), plus the state store's commit inside addBatch (not
separable here). Planning: `queryPlanning`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_pipeline import REPO, _descendants, bench_spec, cpu_seconds, log, patient
from engine_bench import make_events, preload

STAGES = ("fetch", "from_json", "parse", "checks", "dedup", "handover", "insert")
EXTRA = ("narrow",)  # not a prefix of the pipeline: measured beside it


@dataclass(frozen=True)
class NoInsert:
    """What the sink's PartitionWriter does before its insert (Arrow table, dead-letter split), no insert."""

    columns: tuple[str, ...]

    def __call__(self, batches: Any) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        collected = [b for b in batches if b.num_rows]
        rows = 0
        if collected:
            table = pa.Table.from_batches(collected)
            good = pc.is_null(table.column("_cf_error"))
            rows = table.filter(good).select(list(self.columns)).num_rows
        yield pa.RecordBatch.from_pydict(
            {
                "partition": pa.array([0], pa.int32()),
                "rows_written": pa.array([rows], pa.int64()),
                "dead_letters": pa.array([0], pa.int64()),
                "insert_ms": pa.array([0], pa.int64()),
            }
        )


def build_prefix(spark: Any, spec: Any, stage: str) -> Any:
    from pyspark.sql import functions as F

    from spark_jobs import pipeline, transforms

    df = pipeline.read_kafka(spark, spec)
    if stage == "fetch":
        return df
    if stage == "from_json":
        schema = transforms._string_schema([f.path for f in spec.source.fields])
        text = F.col("_cf_value").cast("string")
        return df.select("*", F.from_json(text, schema, {"mode": "PERMISSIVE"}).alias("_cf_json"))
    upto = {"parse": 1, "checks": 2, "dedup": 3, "narrow": 2}.get(stage, 4)
    for _name, step in pipeline.stream_steps(spec)[:upto]:
        df = step(df)
    if stage == "narrow":
        from spark_jobs import dedup

        df = dedup.drop_duplicates(
            df.select(dedup.KEY_HIGH, dedup.KEY_LOW, transforms.ERROR, *dedup.ORDER_COLUMNS), window_seconds=3600
        )
    return df


def spark_cpu(services: set[int]) -> float:
    """CPU seconds of this process's children but the services: Spark's JVM and its Python workers."""
    total = 0.0
    for pid in _descendants(os.getpid()):
        if pid == os.getpid() or pid in services:
            continue
        try:
            total += cpu_seconds(pid)
        except OSError:
            continue
    return total


def run_prefix(
    spark: Any, spec: Any, stage: str, workdir: Path, label: str, services: dict[str, int]
) -> dict[str, Any]:
    from spark_jobs import query
    from spark_jobs import sink as ch
    from spark_jobs.metrics import SinkStats

    df = build_prefix(spark, spec, stage)
    writer = df.writeStream.queryName(f"profile-{label}").option("checkpointLocation", str(workdir / label))
    stats = SinkStats()
    if stage == "handover":
        columns = tuple(c.column for c in spec.sink.columns)
        writer = writer.foreachBatch(lambda b, _i: b.mapInArrow(NoInsert(columns), ch.STATS_SCHEMA).collect())
    elif stage == "insert":
        writer = writer.foreachBatch(query.BatchWriter(spec, f"{spec.name}:{label}", stats))
    else:
        writer = writer.format("noop")
    service_trees = {pid for root in services.values() for pid in _descendants(root)}
    cpu_before, ch_before = spark_cpu(service_trees), cpu_seconds(services["clickhouse"])
    started = time.monotonic()
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination()
    wall = time.monotonic() - started
    cpu = spark_cpu(service_trees) - cpu_before
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    if len(progress) != 1:
        raise SystemExit(f"{label}: expected one micro-batch with rows, got {len(progress)}")
    durations = dict(progress[0]["durationMs"])
    return {
        "stage": stage,
        "rows": progress[0]["numInputRows"],
        "add_batch_ms": durations.get("addBatch", 0),
        "trigger_ms": durations.get("triggerExecution", 0),
        "planning_ms": durations.get("queryPlanning", 0),
        "get_batch_ms": durations.get("getBatch", 0) + durations.get("latestOffset", 0),
        "commit_ms": durations.get("walCommit", 0) + durations.get("commitOffsets", 0),
        "insert_ms_max": stats.pop(0).get("insert_ms_max", 0) if stage == "insert" else 0,
        "wall_s": round(wall, 2),
        "spark_cpu_s": round(cpu, 2),
        "clickhouse_cpu_s": round(cpu_seconds(services["clickhouse"]) - ch_before, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--dup-ratio", type=float, default=0.10)
    parser.add_argument("--rounds", type=int, default=3, help="the first warms up; medians over the others")
    parser.add_argument("--stages", default=",".join(STAGES), help="comma-separated subset, in pipeline order")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    args = parser.parse_args()
    stages = [s for s in (*STAGES, *EXTRA) if s in args.stages.split(",")]

    sys.path.insert(0, str(REPO))
    from localstack import processes, service_defs

    # SIGTERM unwinds like Ctrl-C, so the broker and ClickHouse started below are stopped too.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    from clearflow_spec.connections import connection_dict
    from clearflow_spec.spec import parse_spec
    from spark_jobs import pipeline, session
    from spark_jobs import sink as ch

    workdir = Path(tempfile.mkdtemp(prefix="clearflow-profile-"))
    with processes.ProcessGroup(workdir / "logs") as group:
        port = processes.free_port()
        broker = group.start(patient(service_defs.kafka_broker(port=port, data_dir=workdir / "kafka")))
        services = {"broker": broker.process.pid}
        bootstrap = f"127.0.0.1:{port}"
        ch_port = processes.free_port()
        clickhouse = group.start(patient(service_defs.clickhouse(port=ch_port, data_dir=workdir / "chdata")))
        services["clickhouse"] = clickhouse.process.pid

        events = make_events(args.events, args.dup_ratio)
        topic = f"profile-{uuid.uuid4().hex[:8]}"
        seconds = preload(bootstrap, topic, args.partitions, events)
        log(f"pre-loaded {args.events:,} events into {topic} in {seconds:.1f}s")

        conf = {
            "spark.sql.shuffle.partitions": str(args.partitions),
            "spark.driver.memory": "2g",
            **session.state_store_conf(),
            **dict(item.split("=", 1) for item in args.conf),
        }
        spark = session.build_session(app_name="stage-profile", master="local[2]", conf=conf)
        spark.sparkContext.setLogLevel("WARN")
        results: list[dict[str, Any]] = []
        try:
            for round_no in range(args.rounds):
                for stage in stages:
                    data = bench_spec(
                        topic=topic,
                        bootstrap=bootstrap,
                        clickhouse=("127.0.0.1", ch_port),
                        dedup=True,
                        max_records_per_batch=args.events * 2,
                    )
                    spec = parse_spec(json.dumps(data))
                    if stage == "insert":
                        ch.prepare_tables(
                            connection_dict(spec.sink.clickhouse, reveal_secrets=True),
                            pipeline.table_spec(spec),
                            create=True,
                        )
                    load = os.getloadavg()[0]
                    result = run_prefix(spark, spec, stage, workdir, f"{stage}-{round_no}", services)
                    result.update(round=round_no + 1, load_avg_1m=round(load, 2))
                    log(json.dumps(result))
                    results.append(result)
        finally:
            spark.stop()

    print(json.dumps({"events": args.events, "rounds": results, "table": table(results, stages)}, indent=2))
    print(markdown(results, stages, args.events))
    return 0


def table(results: list[dict[str, Any]], stages: list[str]) -> list[dict[str, Any]]:
    """Per stage: the median batch time of its prefix (rounds after the first) and the difference to the
    previous prefix."""
    warm = [r for r in results if r["round"] > 1] or results
    rows, previous, previous_cpu, by_stage = [], 0.0, 0.0, {}
    for stage in stages:
        prefix = statistics.median(r["add_batch_ms"] for r in warm if r["stage"] == stage)
        cpu = statistics.median(r["spark_cpu_s"] for r in warm if r["stage"] == stage)
        by_stage[stage] = prefix
        by_stage[f"{stage}:cpu"] = cpu
        rows.append(
            {
                "stage": stage,
                # narrow stands beside the pipeline: its cost is counted from checks, like dedup's
                "prefix_ms": prefix,
                "stage_ms": prefix - (by_stage.get("checks", 0.0) if stage in EXTRA else previous),
                "prefix_cpu_s": cpu,
                "stage_cpu_s": cpu - (by_stage.get("checks:cpu", 0.0) if stage in EXTRA else previous_cpu),
                "clickhouse_cpu_s": statistics.median(r["clickhouse_cpu_s"] for r in warm if r["stage"] == stage),
                "planning_ms": statistics.median(r["planning_ms"] for r in warm if r["stage"] == stage),
                "commit_ms": statistics.median(r["commit_ms"] for r in warm if r["stage"] == stage),
                "runs_ms": [r["add_batch_ms"] for r in results if r["stage"] == stage],
            }
        )
        if stage not in EXTRA:
            previous, previous_cpu = prefix, cpu
    return rows


def markdown(results: list[dict[str, Any]], stages: list[str], events: int) -> str:
    rows = table(results, stages)
    pipeline_rows = [r for r in rows if r["stage"] not in EXTRA]
    total_cpu = pipeline_rows[-1]["prefix_cpu_s"] if pipeline_rows else 1
    lines = [
        "| stage | prefix CPU s | stage CPU s | share of CPU | CPU µs per event | prefix batch ms | stage ms "
        "| runs (ms) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['stage']} | {row['prefix_cpu_s']:.1f} | {row['stage_cpu_s']:.1f} "
            f"| {row['stage_cpu_s'] / (total_cpu or 1):.0%} | {row['stage_cpu_s'] / events * 1e6:.1f} "
            f"| {row['prefix_ms']:,.0f} | {row['stage_ms']:,.0f} | {', '.join(f'{v:,}' for v in row['runs_ms'])} |"
        )
    if pipeline_rows and pipeline_rows[-1]["clickhouse_cpu_s"]:
        lines.append(f"\nClickHouse's CPU during the insert prefix: {pipeline_rows[-1]['clickhouse_cpu_s']:.1f} s")
    last = pipeline_rows[-1] if pipeline_rows else rows[-1]
    lines.append(f"\nplanning {last['planning_ms']:,.0f} ms, commit (offsets + commit log) {last['commit_ms']:,.0f} ms")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
