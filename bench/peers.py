"""ClearFlow beside what a user would pick instead, on the same topic in the same run (run by hand, not a test).

    .venv/bin/python bench/peers.py --events 1000000 --rounds 3

Starts its own Apache Kafka broker, ClickHouse (chDB, localstack.clickhouse_server) and Redis, pre-loads N JSON
events (bench/engine_bench.py's: 187 B, 10% duplicates, 2 partitions) into one topic, then per round, each system
reading that whole topic from the start (a fresh consumer group, a fresh table):

- raw: one confluent-kafka consumer that reads every record and does nothing with it (the ceiling);
- handrolled: a confluent-kafka consumer in its own process: per batch of up to 50,000 records orjson parses
  them, ONE Lua call does `SET key 1 NX EX 3600` for every key of the batch in Redis, the new events are
  inserted into a ClickHouse MergeTree (clickhouse-connect), then the offsets are committed;
- kafka_engine: ClickHouse's own Kafka table engine (JSONEachRow, one consumer per partition) -> a materialized
  view -> ReplacingMergeTree(ORDER BY event_id); done when every record is in the table (duplicates included:
  they go only at a merge or with FINAL);
- clearflow: the job (`python -m spark_jobs.run --available-now`, dedup on event_id over 1h, exactly-once sink),
  bench/engine_bench.py's pipeline.

With `--vs-code DIR`, one more system, clearflow_vs: the same job with another checkout's engine (`PYTHONPATH=DIR`,
this venv's jars), for a before/after of a change in the same run.

The systems run in turn (raw, handrolled, kafka_engine, clearflow[, clearflow_vs]; the order rotates each round).
Events/s: the whole topic over the time from the system's first read to the last row visible in ClickHouse
(ClearFlow: first micro-batch start to the end of the last, Spark's start excluded; its wall time with the start
is given too). CPU seconds per million events: every process the system used (ClickHouse, the broker and Redis
included: their CPU during the system's run). Medians over the rounds; each round's figures and the load average
are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench_pipeline import REPO, bench_spec, cpu_seconds, log, patient
from engine_bench import make_events, preload, raw_consume_rate, run_job

SYSTEMS = ("raw", "handrolled", "kafka_engine", "clearflow")
GUARANTEES = {
    "raw": "none (reads only)",
    "handrolled": "dedup while the key lives in Redis (EX 3600); a crash after SET NX and before the insert loses "
    "those events for good (their keys are taken); a crash after the insert and before the commit is harmless",
    "kafka_engine": "at-least-once; duplicates visible until a background merge or FINAL (dedup only within the "
    "table's merges, no window; a block replayed after a crash is written again)",
    "clearflow": "exactly-once across SIGKILL; first event wins over a 1h window; dead letters with reasons",
    "clearflow_vs": "the same job, another checkout's engine (--vs-code)",
}
HANDROLLED_BATCH = 50_000
# KEYS: the batch's keys; ARGV[1]: the TTL. 1 for a key seen for the first time, 0 for a duplicate.
SET_NX_LUA = """
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = redis.call('SET', key, '1', 'NX', 'EX', ARGV[1]) and 1 or 0
end
return out
"""
DEST_COLUMNS = (
    "event_id String, user_id UUID, email String, amount Float64, created_at DateTime64(3, 'UTC'), "
    "_ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)"
)


def handrolled(args: argparse.Namespace) -> int:
    """The hand-rolled consumer (its own process, so its CPU is its own): prints its figures as JSON."""
    from datetime import datetime

    import clickhouse_connect
    import orjson
    import redis
    from confluent_kafka import Consumer

    host, port = args.clickhouse.rsplit(":", 1)
    client = clickhouse_connect.get_client(host=host, port=int(port), compress=False)
    store = redis.Redis.from_url(args.redis)
    set_nx = store.register_script(SET_NX_LUA)
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": f"handrolled-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.max.bytes": 64 * 1024 * 1024,
            "max.partition.fetch.bytes": 16 * 1024 * 1024,
            "queued.min.messages": 200_000,
        }
    )
    consumer.subscribe([args.topic])
    read = written = 0
    started = None
    while read < args.expected:
        messages = [m for m in consumer.consume(HANDROLLED_BATCH, 1.0) if m.error() is None]
        if not messages:
            continue
        started = started or time.monotonic()
        read += len(messages)
        events = [orjson.loads(m.value()) for m in messages]
        fresh = set_nx(keys=[f"dedup:{e['event_id']}" for e in events], args=[3600])
        kept = [e for e, new in zip(events, fresh, strict=True) if new]
        if kept:
            columns = [
                [e["event_id"] for e in kept],
                [e["user"]["id"] for e in kept],
                [e["email"] for e in kept],
                [float(e["amount"]) for e in kept],
                [datetime.fromisoformat(e["created_at"]) for e in kept],
            ]
            client.insert(
                args.table,
                columns,
                column_names=["event_id", "user_id", "email", "amount", "created_at"],
                column_oriented=True,
            )
            written += len(kept)
        consumer.commit(asynchronous=False)
    elapsed = time.monotonic() - (started or time.monotonic())
    consumer.close()
    print(json.dumps({"read": read, "written": written, "seconds": elapsed}))
    return 0


class Peers:
    """The services of one benchmark run and the figures of each system's runs."""

    def __init__(
        self, bootstrap: str, ch: tuple[str, int], redis_url: str, services: dict[str, int], vs_code: str | None
    ) -> None:
        import clickhouse_connect

        self.bootstrap, self.ch, self.redis_url, self.services = bootstrap, ch, redis_url, services
        self.vs_code = vs_code
        self.unique = 0  # unique keys in the topic, set once it is loaded
        self.client = clickhouse_connect.get_client(host=ch[0], port=ch[1])

    def services_cpu(self) -> dict[str, float]:
        return {name: cpu_seconds(pid) for name, pid in self.services.items()}

    def raw(self, topic: str, events: int, partitions: int, _workdir: Path) -> dict[str, Any]:
        before = time.process_time()
        rate = raw_consume_rate(self.bootstrap, topic, partitions, events)
        return {"events_per_s": rate, "cpu_s": {"consumer": time.process_time() - before}}

    def handrolled(self, topic: str, events: int, _partitions: int, _workdir: Path) -> dict[str, Any]:
        import redis

        # Each run starts with no keys, as a new deployment would: the last round's keys would make every event
        # of this one a duplicate (round 2 once wrote 0 rows).
        redis.Redis.from_url(self.redis_url).flushdb()
        table = f"handrolled_{uuid.uuid4().hex[:6]}"
        self.client.command(f"CREATE TABLE {table} ({DEST_COLUMNS}) ENGINE = MergeTree ORDER BY event_id")
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "handrolled",
                f"--bootstrap={self.bootstrap}",
                f"--topic={topic}",
                f"--expected={events}",
                f"--redis={self.redis_url}",
                f"--clickhouse={self.ch[0]}:{self.ch[1]}",
                f"--table={table}",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        rows = self.client.command(f"SELECT count() FROM {table}")
        store_keys = int(self.client.command(f"SELECT uniqExact(event_id) FROM {table}"))
        return {
            "events_per_s": events / figures["seconds"],
            "cpu_s": {"consumer": (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)},
            "rows": rows,
            "unique_rows": store_keys,
        }

    def kafka_engine(self, topic: str, events: int, partitions: int, _workdir: Path) -> dict[str, Any]:
        unique = self.unique
        suffix = uuid.uuid4().hex[:6]
        queue, dest, view = f"kafka_{suffix}", f"replacing_{suffix}", f"mv_{suffix}"
        self.client.command(f"CREATE TABLE {dest} ({DEST_COLUMNS}) ENGINE = ReplacingMergeTree ORDER BY event_id")
        self.client.command(
            f"CREATE TABLE {queue} (event_id String, user Tuple(id UUID), email String, amount Float64, "
            f"created_at DateTime64(3, 'UTC')) ENGINE = Kafka SETTINGS kafka_broker_list = '{self.bootstrap}', "
            f"kafka_topic_list = '{topic}', kafka_group_name = 'chkafka-{suffix}', kafka_format = 'JSONEachRow', "
            f"kafka_num_consumers = {partitions}, kafka_max_block_size = 262144, kafka_flush_interval_ms = 1000, "
            "date_time_input_format = 'best_effort'"
        )
        started = time.monotonic()
        self.client.command(
            f"CREATE MATERIALIZED VIEW {view} TO {dest} AS "
            f"SELECT event_id, user.id AS user_id, email, amount, created_at FROM {queue}"
        )
        # Done when the consumers' offsets reach the topic's end (ClickHouse commits them after the block is in
        # the table) and every unique event is visible: count() cannot tell, background merges drop duplicates.
        # The offsets first (a cheap system table), then the unique count (a scan of the table, whose CPU is
        # ClickHouse's and counted against the engine: asked every 0.1 s from the start it cost the engine time).
        offsets_sql = (
            f"SELECT (SELECT sum(arraySum(assignments.current_offset)) FROM system.kafka_consumers "
            f"WHERE database = currentDatabase() AND table = '{queue}') >= {events}"
        )
        unique_sql = f"SELECT (SELECT uniqExact(event_id) FROM {dest}) >= {unique}"
        for done_sql in (offsets_sql, unique_sql):
            while time.monotonic() - started < 900 and self.client.command(done_sql) != 1:
                time.sleep(0.1)
        elapsed = time.monotonic() - started
        self.client.command(f"DROP TABLE {view}")
        self.client.command(f"DROP TABLE {queue}")
        unique = int(self.client.command(f"SELECT uniqExact(event_id) FROM {dest}"))
        visible = int(self.client.command(f"SELECT count() FROM {dest}"))
        return {
            "events_per_s": events / elapsed,
            "cpu_s": {},
            "rows": visible,
            "unique_rows": unique,
            "duplicates_visible": visible - unique,
        }

    def clearflow_vs(self, topic: str, events: int, partitions: int, workdir: Path) -> dict[str, Any]:
        return self.clearflow(topic, events, partitions, workdir, code=self.vs_code)

    def clearflow(
        self, topic: str, events: int, _partitions: int, workdir: Path, code: str | None = None
    ) -> dict[str, Any]:
        spec = bench_spec(
            topic=topic, bootstrap=self.bootstrap, clickhouse=self.ch, dedup=True, max_records_per_batch=500_000
        )
        result = run_job(spec, workdir, f"clearflow-{uuid.uuid4().hex[:6]}", [], {}, code=code)
        rows = int(self.client.command(f"SELECT count() FROM {spec['sink']['table']}"))
        return {
            "events_per_s": result["events_per_s"],
            "events_per_s_with_spark_start": events / result["wall_s_including_spark_start"],
            "cpu_s": result["cpu_s_by_component"],
            "rows": rows,
            "unique_rows": rows,
            "peak_rss_mb": round(result["peak_rss_mb"]),
        }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "handrolled":
        sub = argparse.ArgumentParser()
        for name in ("bootstrap", "topic", "redis", "clickhouse", "table"):
            sub.add_argument(f"--{name}", required=True)
        sub.add_argument("--expected", type=int, required=True)
        return handrolled(sub.parse_args(sys.argv[2:]))

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--dup-ratio", type=float, default=0.10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset")
    parser.add_argument("--vs-code", metavar="DIR", help="also run the job with DIR's spark_jobs (clearflow_vs)")
    args = parser.parse_args()
    systems = [s for s in SYSTEMS if s in args.systems.split(",")] + (["clearflow_vs"] if args.vs_code else [])

    sys.path.insert(0, str(REPO))
    from localstack import processes, service_defs

    # SIGTERM unwinds like Ctrl-C, so the broker and ClickHouse started below are stopped too.
    signal.signal(signal.SIGTERM, signal.default_int_handler)

    workdir = Path(tempfile.mkdtemp(prefix="clearflow-peers-"))
    with processes.ProcessGroup(workdir / "logs") as group:
        port, ch_port, redis_port = processes.free_port(), processes.free_port(), processes.free_port()
        broker = group.start(patient(service_defs.kafka_broker(port=port, data_dir=workdir / "kafka")))
        clickhouse = group.start(patient(service_defs.clickhouse(port=ch_port, data_dir=workdir / "chdata")))
        redis = group.start(patient(service_defs.redis(port=redis_port, data_dir=workdir / "redis")))
        services = {"broker": broker.process.pid, "clickhouse": clickhouse.process.pid, "redis": redis.process.pid}
        bootstrap = f"127.0.0.1:{port}"
        peers = Peers(bootstrap, ("127.0.0.1", ch_port), f"redis://127.0.0.1:{redis_port}/0", services, args.vs_code)

        events = make_events(args.events, args.dup_ratio)
        unique = len({json.loads(e)["event_id"] for e in events})
        topic = f"peers-{uuid.uuid4().hex[:8]}"
        seconds = preload(bootstrap, topic, args.partitions, events)
        log(f"pre-loaded {args.events:,} events ({unique:,} unique) into {topic} in {seconds:.1f}s")
        peers.unique = unique

        results: list[dict[str, Any]] = []
        for round_no in range(args.rounds):
            order = systems[round_no % len(systems) :] + systems[: round_no % len(systems)]
            for system in order:
                load = os.getloadavg()[0]
                services_before = peers.services_cpu()
                result = getattr(peers, system)(topic, args.events, args.partitions, workdir)
                services_after = peers.services_cpu()
                used = {name: services_after[name] - services_before[name] for name in services}
                if system == "raw":
                    used = {"broker": used["broker"]}
                elif system in ("kafka_engine", "clearflow", "clearflow_vs"):
                    used.pop("redis")
                cpu = {**result.pop("cpu_s"), **used}
                result.update(
                    system=system,
                    round=round_no + 1,
                    cpu_s=({k: round(v, 1) for k, v in cpu.items()}),
                    cpu_s_per_million=round(sum(cpu.values()) / args.events * 1e6, 1),
                    load_avg_1m=[round(load, 2), round(os.getloadavg()[0], 2)],
                )
                log(json.dumps(result))
                results.append(result)

    print(json.dumps({"events": args.events, "unique": unique, "runs": results}, indent=2))
    print(markdown(results, systems))
    return 0


def markdown(results: list[dict[str, Any]], systems: list[str]) -> str:
    raw = statistics.median(r["events_per_s"] for r in results if r["system"] == "raw") if "raw" in systems else 0
    cf = [r for r in results if r["system"] == "clearflow"]
    lines = [
        "| system | events/s (median) | runs | of raw | ClearFlow / this (paired) | CPU s per 1M events "
        "| its CPU / ClearFlow's (paired) | guarantees |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for system in systems:
        runs = [r for r in results if r["system"] == system]
        rate = statistics.median(r["events_per_s"] for r in runs)
        paired = [c["events_per_s"] / r["events_per_s"] for c, r in zip(cf, runs, strict=False)]
        cpu_paired = [r["cpu_s_per_million"] / c["cpu_s_per_million"] for c, r in zip(cf, runs, strict=False)]
        each = ", ".join(f"{r['events_per_s']:,.0f}" for r in runs)
        lines.append(
            f"| {system} | {rate:,.0f} | {each} "
            f"| {rate / raw:.2f} | {statistics.median(paired):.2f} "
            f"| {statistics.median(r['cpu_s_per_million'] for r in runs):.1f} | {statistics.median(cpu_paired):.2f} "
            f"| {GUARANTEES[system]} |"
            if raw and paired
            else f"| {system} | {rate:,.0f} | | | | | | {GUARANTEES[system]} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
