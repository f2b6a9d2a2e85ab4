"""Deploy -> first row, step by step (run by hand, not a test; results go to docs/performance.md).

    nice -n 19 .venv/bin/python bench/deploy_start.py [--pipelines 3] [--events 1000] [--stop-each] [--back-to-back]
    nice -n 19 .venv/bin/python bench/deploy_start.py --after-up --pipelines 5 --compare CLEARFLOW_STANDBY=1

--after-up is what a person sees: the first deploy as soon as the stack says it is up, each next one as soon as
the previous one's first row is there ("five in a row" with --pipelines 5), never waiting for a standby job.
--compare runs it all again on a new stack with that environment (e.g. the pool of one standby the worker kept
before) and prints both runs' median and worst, and their ratio.

Starts the whole local stack as `make up` does (bench/soak.py's Stack: Kafka, ClickHouse, Redis, the web app, a
Celery worker and beat, on free ports, removed at the end), then deploys --pipelines pipelines through the REST
API, one after the other (each on its own topic, with --events JSON events already waiting), the earlier ones left
running unless --stop-each. For each deploy, seconds from the deploy call to:
- pickup:  the worker's reconciler starts acting (its log line "starting its job at", worker.reconciler);
- spawn:   the job's supervisor process exists (the run's `process_started`, from the runs API);
- runner:  the job's Python runner has imported and logs its first line (clearflow_spec.protocol.TIMING_LINE);
- jvm:     the driver JVM started (its RuntimeMXBean start time);
- session: the SparkSession is ready;
- handoff: a standby job (worker.standby) took the pipeline: spawn, runner, jvm and session are then negative
           (they happened before the deploy, while the standby waited);
- query:   the streaming query started (registry, ClickHouse prepare, checkpoint, writeStream.start());
- batch:   the first micro-batch started (its metrics record in Redis: `timestamp`);
- insert:  the first row arrived in ClickHouse (min `_cf_ingested_at`, ClickHouse's clock, the same machine);
- visible: this script's poll first saw a row (`count()` > 0, every 0.1 s).
Prints a line per deploy, then the median of each step; the last one is deploy -> first row (to keep at 5 s or less).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench_pipeline import REPO, log
from soak import Stack, batch_start, pipeline_spec

sys.path.insert(0, str(REPO))

from clearflow_spec.protocol import TIMING_LINE_RE, history_key
from localstack.processes import wait_until

STEPS = ("pickup", "spawn", "runner", "jvm", "session", "handoff", "query", "batch", "insert", "visible")
PICKUP_RE = re.compile(r"pipeline (\d+): starting its job at ([0-9.]+)")
FIRST_ROW_TIMEOUT = 180.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", type=int, default=3)
    parser.add_argument("--events", type=int, default=1000, help="events waiting in each topic before the deploy")
    parser.add_argument("--stop-each", action="store_true", help="stop each pipeline before deploying the next")
    parser.add_argument("--keep", action="store_true", help="keep the stack's state and database")
    parser.add_argument(
        "--back-to-back",
        action="store_true",
        help="deploy as soon as the previous first row is seen, without waiting for the worker's new standby job",
    )
    parser.add_argument(
        "--after-up",
        action="store_true",
        help="the first deploy as soon as the stack is up, the others back to back (no wait for a standby job)",
    )
    parser.add_argument(
        "--compare",
        metavar="VARIABLE=VALUE",
        action="append",
        default=[],
        help="then run it all again on a new stack with this environment (e.g. CLEARFLOW_STANDBY=1), for a ratio",
    )
    args = parser.parse_args(argv)
    if any("=" not in item for item in args.compare):
        parser.error("--compare takes VARIABLE=VALUE, e.g. CLEARFLOW_STANDBY=1")
    return args


def produce(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    now = int(time.time() * 1000)
    for i in range(n):
        event = {"id": str(uuid.uuid4()), "produced_at": now, "user": f"u{i % 50}", "amount": i * 0.5}
        producer.produce(topic, json.dumps(event).encode(), partition=i % 2)
    producer.flush(60)


def pickup_time(var_dir: Path, pipeline_id: int, since: float) -> float | None:
    """The worker's first "starting its job" line for this pipeline after `since` (from any log of the stack)."""
    for path in var_dir.rglob("*.log"):
        for match in PICKUP_RE.finditer(path.read_text(errors="replace")):
            if int(match.group(1)) == pipeline_id and float(match.group(2)) >= since:
                return float(match.group(2))
    return None


def process_started(pid: int | None) -> float | None:
    """The job supervisor's start (epoch s): it runs as long as the job, so it is still there to ask."""
    import psutil

    try:
        return psutil.Process(pid).create_time() if pid else None
    except psutil.Error:
        return None


def job_steps(log_path: str) -> dict[str, float]:
    text = Path(log_path).read_text(errors="replace") if Path(log_path).exists() else ""
    return {m.group(1): float(m.group(2)) for m in TIMING_LINE_RE.finditer(text)}


def standby_ready(stack: Stack) -> bool:
    """The worker's standby job waits for a pipeline (its channel exists, no pipeline took it)."""
    from worker import standby

    return any(s.ready for s in standby.waiting(stack.var_dir / "runs"))


def deploy_once(
    stack: Stack, clickhouse, redis_client, connections: tuple[int, int], index: int, events: int, *, wait_standby: bool
) -> dict:
    topic, table = f"start-{uuid.uuid4().hex[:8]}", f"start_{uuid.uuid4().hex[:8]}"
    produce(stack.env["KAFKA_BOOTSTRAP_SERVERS"], topic, events)
    if wait_standby and not wait_until(lambda: standby_ready(stack), timeout=300, interval=0.5):
        log("no standby job ready after 300 s: this deploy starts cold")
    spec = pipeline_spec(topic, table, window="10m", time_mode="ingestion")
    pipeline = stack.api(
        "POST",
        "pipelines/",
        {
            "name": f"start-{index}",
            "kafka_connection": connections[0],
            "clickhouse_connection": connections[1],
            "spec": spec,
        },
    )
    time.sleep(1.0)  # the worker's watch tick for the new pipeline passes; the deploy is what is measured
    deployed = time.time()
    stack.api("POST", f"pipelines/{pipeline['id']}/deploy/")
    deadline = time.monotonic() + FIRST_ROW_TIMEOUT
    visible = None
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # the job creates the table
            if int(clickhouse.command(f"SELECT count() FROM `{table}`")) > 0:
                visible = time.time()
                break
        time.sleep(0.1)
    if visible is None:
        status = stack.api("GET", f"pipelines/{pipeline['id']}/status/")
        raise SystemExit(f"no row within {FIRST_ROW_TIMEOUT:.0f} s: {status['status']} {status['status_message']}")
    first_insert = clickhouse.command(f"SELECT toUnixTimestamp64Milli(min(_cf_ingested_at)) FROM `{table}`")
    runs = stack.api("GET", f"pipelines/{pipeline['id']}/runs/")
    run = runs[-1] if runs else {}
    steps = job_steps(run.get("log_path") or "")
    # The first batch's record is written when that batch ends, just after its insert.
    key = history_key(f"pipeline-{pipeline['id']}")
    wait_until(lambda: bool(redis_client.zrange(key, 0, 0)), timeout=15, interval=0.2)
    records = redis_client.zrange(key, 0, 0)
    first_batch = json.loads(records[0]) if records else None
    at = {
        "pickup": pickup_time(stack.var_dir, pipeline["id"], deployed - 1),
        "spawn": process_started(run.get("pid")),
        **{step: steps.get(step) for step in ("runner", "jvm", "session", "handoff", "query")},
        "batch": batch_start(first_batch) if first_batch else None,
        "insert": int(first_insert) / 1000.0,
        "visible": visible,
    }
    if len(runs) > 1:
        log(f"pipeline {pipeline['id']} ran {len(runs)} times before its first row")
    log(f"pipeline {pipeline['id']}: {run.get('start', '')}")
    return {
        "pipeline": pipeline["id"],
        **{step: (t - deployed if t else None) for step, t in at.items()},
        # Where the first micro-batch's time went, as the job reports it (addBatch, queryPlanning...).
        "first_batch_phases_ms": first_batch.get("phases_ms") if first_batch else None,
    }


def line(label: str, result: dict) -> str:
    cells = " ".join(f"{result[s]:7.2f}" if result.get(s) is not None else "      -" for s in STEPS)
    return f"{label:>10} {cells}"


def run(args: argparse.Namespace, environment: dict[str, str]) -> tuple[list[dict], float]:
    """One stack, its deploys; each deploy's steps, and the seconds the stack took to say it is up."""
    stack = Stack(keep=args.keep)
    stack.env.update(environment)
    try:
        log(f"starting the stack in {stack.var_dir} ({' '.join(f'{k}={v}' for k, v in environment.items())})")
        began = time.monotonic()
        stack.start()
        up_seconds = time.monotonic() - began
        import clickhouse_connect
        import redis

        clickhouse = clickhouse_connect.get_client(host="127.0.0.1", port=stack.ports["clickhouse"])
        redis_client = redis.Redis.from_url(stack.env["REDIS_URL"])
        bootstrap = stack.env["KAFKA_BOOTSTRAP_SERVERS"]
        kafka = stack.api("POST", "connections/kafka/", {"name": "start kafka", "bootstrap_servers": bootstrap})
        ch_body = {"name": "start ch", "host": "127.0.0.1", "port": stack.ports["clickhouse"]}
        ch = stack.api("POST", "connections/clickhouse/", ch_body)
        # With CLEARFLOW_STANDBY=0 (cold starts, for comparison) there is no standby to wait for.
        wait_standby = not (args.back_to_back or args.after_up) and stack.env.get("CLEARFLOW_STANDBY", "auto") != "0"
        results = []
        for index in range(args.pipelines):
            result = deploy_once(
                stack, clickhouse, redis_client, (kafka["id"], ch["id"]), index, args.events, wait_standby=wait_standby
            )
            results.append(result)
            log(line(f"deploy {index + 1}", result))
            log(f"deploy {index + 1}: its first batch's phases (ms): {result['first_batch_phases_ms']}")
            if args.stop_each:
                stack.api("POST", f"pipelines/{result['pipeline']}/stop/")
                time.sleep(5)
        return results, up_seconds
    finally:
        log("stopping the stack")
        stack.stop()


def report(label: str, results: list[dict], up_seconds: float) -> tuple[float, float]:
    """Prints a run's table; its median and worst deploy -> first row visible."""
    print(f"{label}: the stack was up after {up_seconds:.1f} s; seconds from the deploy call to each step")
    print(f"{'':>10} " + " ".join(f"{s:>7}" for s in STEPS))
    for index, result in enumerate(results):
        print(line(f"deploy {index + 1}", result))
    medians = {
        s: statistics.median(v) if (v := [r[s] for r in results if r.get(s) is not None]) else None for s in STEPS
    }
    print(line("median", medians))
    worst = max(r["visible"] for r in results)
    print(f"{label}: deploy -> first row visible: median {medians['visible']:.2f} s, worst {worst:.2f} s")
    return medians["visible"], worst


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> int:
    args = parse_args()
    runs = [("this run", {})] + [(item, dict([item.split("=", 1)])) for item in args.compare]
    measured = []
    for label, environment in runs:
        before = uptime()
        results, up_seconds = run(args, environment)
        measured.append((label, results, up_seconds, before, uptime()))
    figures = []
    for label, results, up_seconds, before, after in measured:
        figures.append(report(label, results, up_seconds))
        print(f"{label}: load before the stack started: {before}")
        print(f"{label}: load after its deploys: {after}")
    for (label, *_), (median, worst) in zip(measured[1:], figures[1:], strict=True):
        print(f"{label} / this run: median {median / figures[0][0]:.2f}x, worst {worst / figures[0][1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
