"""Chaos bench (run by hand, not a test): one pipeline at a steady rate while one component after another is
killed, then the time each took to recover and, at the end, the rows lost and doubled.

    nice -n 10 .venv/bin/python bench/chaos.py --rate 2000 --every 60 --out var/chaos/short    # about 8 minutes
    .venv/bin/python bench/chaos.py --rate 5000 --every 240 --rounds 2                        # the long run

Starts the whole local stack as `make up` does (bench/soak.py's `Stack`: free ports, a temporary directory, a
database of its own), creates one pipeline through the REST API (soak's: dedup on a UUID `id`), starts the load
(soak's producer, --dup-share re-sends), deploys --lead-seconds later (sized from the topic's rate, so that no
re-size runs under the faults), and once rows arrive kills, every --every seconds, one of
--faults in turn (--rounds times):
- `job`: SIGKILL to the pipeline job's whole session (the watcher restarts it, in a standby when one is ready);
- `worker`, `redis`, `kafka`, `clickhouse`: SIGKILL to that service's process group, found in the stack's
  `var/run/stack.json` (`make up` starts it again on the same address and data).
Recovered is when the component runs again (a new pid in stack.json, or a new running run of the pipeline) and
ClickHouse has rows written after that, with the pipeline running and exactly one active run. At the end the
load stops, the job catches up, and count() / uniqExact(id) against the unique ids produced give the rows lost
and doubled (over the whole run: a fault's own share cannot be told apart once the job has replayed).
Writes summary.json in --out and prints the table docs/operations.md shows.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench_pipeline import REPO, log
from soak import START_TIMEOUT, Stack, copy_job_logs, pipeline_spec, produce_steadily

sys.path.insert(0, str(REPO))

import clickhouse_connect

from localstack import run_state
from localstack.processes import wait_until

FAULTS = ("job", "worker", "redis", "kafka", "clickhouse")
RECOVERY_TIMEOUT = 600.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=2000, help="events a second")
    parser.add_argument("--dup-share", type=float, default=0.1)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between faults (after a recovery)")
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"in this order, from {', '.join(FAULTS)}")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--lead-seconds", type=float, default=60.0, help="the load runs this long before the deploy")
    parser.add_argument("--drain-timeout", type=float, default=600.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the stack's directory and database")
    return parser.parse_args(argv)


class Pipeline:
    def __init__(self, stack: Stack, pipeline_id: int, table: str) -> None:
        self.stack, self.id, self.table = stack, pipeline_id, table
        self.clickhouse = clickhouse_connect.get_client(host="127.0.0.1", port=stack.ports["clickhouse"])

    def status(self) -> dict:
        return self.stack.api("GET", f"pipelines/{self.id}/status/")

    def active_runs(self) -> list[dict]:
        return [run for run in self.stack.api("GET", f"pipelines/{self.id}/runs/") if run["ended_at"] is None]

    def rows_since(self, moment: float) -> int:
        """Rows ClickHouse received after `moment` (epoch s): `_cf_ingested_at` is its clock at the insert; 0
        before the job created the table."""
        if not self.clickhouse.command(f"EXISTS TABLE `{self.table}`"):
            return 0
        return int(
            self.clickhouse.command(
                f"SELECT count() FROM `{self.table}` "
                f"WHERE _cf_ingested_at > fromUnixTimestamp64Milli({int(moment * 1000)})"
            )
        )

    def counts(self) -> tuple[int, int]:
        total, distinct = self.clickhouse.query(f"SELECT count(), uniqExact(id) FROM `{self.table}`").result_rows[0]
        return int(total), int(distinct)


def service_pid(stack: Stack, name: str) -> int | None:
    record = run_state.read_stack(stack.var_dir) or {}
    return next((int(s["pid"]) for s in record.get("services", []) if s.get("name") == name), None)


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def inflict(stack: Stack, pipeline: Pipeline, fault: str) -> Any:
    """Kill the component; what tells that it is back (the pid it had)."""
    if fault == "job":
        [run] = pipeline.active_runs()
        os.killpg(run["pid"], signal.SIGKILL)
        return run["id"]
    pid = service_pid(stack, fault)
    if pid is None:
        raise SystemExit(f"no {fault} in the stack's record (is it one the stack started?)")
    os.killpg(pid, signal.SIGKILL)
    return pid


def back(stack: Stack, pipeline: Pipeline, fault: str, before: Any) -> bool:
    if fault == "job":
        return any(run["id"] != before and run["running_at"] for run in pipeline.active_runs())
    pid = service_pid(stack, fault)
    return pid is not None and pid != before and alive(pid)


def recover(stack: Stack, pipeline: Pipeline, fault: str, before: Any, at: float) -> dict:
    """Wait until the component is back and rows flow again; the times, in seconds after the fault."""
    result: dict[str, Any] = {"fault": fault}
    deadline = time.monotonic() + RECOVERY_TIMEOUT

    def safely(check: Any) -> bool:
        try:
            return bool(check())
        except (SystemExit, Exception):  # the web app or ClickHouse is the one down: not yet
            return False

    while time.monotonic() < deadline and not safely(lambda: back(stack, pipeline, fault, before)):
        time.sleep(0.5)
    result["component_back_s"] = round(time.time() - at, 1)
    component_back = time.time()

    def flowing() -> bool:
        runs = pipeline.active_runs()
        return len(runs) == 1 and pipeline.status()["status"] == "running" and pipeline.rows_since(component_back) > 0

    while time.monotonic() < deadline and not safely(flowing):
        time.sleep(0.5)
    result["rows_again_s"] = round(time.time() - at, 1)
    result["recovered"] = time.monotonic() < deadline
    return result


def main() -> int:
    args = parse_args()
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = sorted(set(faults) - set(FAULTS))
    if unknown:
        raise SystemExit(f"unknown faults {unknown}: choose from {', '.join(FAULTS)}")
    out = args.out or REPO / "var" / "chaos" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    stack = Stack(keep=args.keep)
    producer = None
    try:
        log(f"starting the stack in {stack.var_dir}")
        stack.start()
        bootstrap = stack.env["KAFKA_BOOTSTRAP_SERVERS"]
        topic, table = f"chaos-{uuid.uuid4().hex[:8]}", f"chaos_{uuid.uuid4().hex[:8]}"
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(60)
        del admin
        kafka = stack.api("POST", "connections/kafka/", {"name": "chaos kafka", "bootstrap_servers": bootstrap})
        clickhouse = stack.api(
            "POST",
            "connections/clickhouse/",
            {"name": "chaos ch", "host": "127.0.0.1", "port": stack.ports["clickhouse"]},
        )
        spec = pipeline_spec(topic, table, window="10m", time_mode="ingestion")
        created = stack.api(
            "POST",
            "pipelines/",
            {"name": "chaos", "kafka_connection": kafka["id"], "clickhouse_connection": clickhouse["id"], "spec": spec},
        )
        pipeline = Pipeline(stack, created["id"], table)
        context = multiprocessing.get_context("fork")
        stop = context.Event()
        sent, unique = context.Value("q", 0, lock=False), context.Value("q", 0, lock=False)
        producer = context.Process(
            target=produce_steadily,
            args=(bootstrap, topic, args.partitions, args.rate, args.dup_share, stop, sent, unique),
            daemon=True,
        )
        producer.start()
        log(f"producing {args.rate:,} events/s; deploying in {args.lead_seconds:g} s")
        time.sleep(args.lead_seconds)  # the job is sized from the topic's recent rate: no re-size under the faults
        stack.api("POST", f"pipelines/{pipeline.id}/deploy/")
        if not wait_until(lambda: pipeline.rows_since(0) > 0, timeout=START_TIMEOUT, interval=2.0):
            raise SystemExit("no rows arrived after the deploy")
        log(f"pipeline {pipeline.id} writes rows at {args.rate:,} events/s; faults every {args.every:g} s: {faults}")
        results = []
        for fault in faults * args.rounds:
            time.sleep(args.every)
            at = time.time()
            before = inflict(stack, pipeline, fault)
            log(f"killed {fault}")
            result = recover(stack, pipeline, fault, before, at)
            results.append(result)
            log(f"{fault}: back after {result['component_back_s']} s, rows again after {result['rows_again_s']} s")
        stop.set()
        producer.join(timeout=180)
        total_unique = unique.value
        log(f"produced {sent.value:,} events ({total_unique:,} unique); waiting for the job to catch up")
        wait_until(lambda: pipeline.counts()[1] >= total_unique, timeout=args.drain_timeout, interval=5.0)
        time.sleep(10)  # a few more micro-batches: anything written twice would show now
        count, distinct = pipeline.counts()
        summary = {
            "rate": args.rate,
            "every_s": args.every,
            "faults": results,
            "unique_produced": total_unique,
            "rows": count,
            "lost": total_unique - distinct,
            "doubled": count - distinct,
            "runs": len(stack.api("GET", f"pipelines/{pipeline.id}/runs/")),
        }
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
        print("| fault | component back | rows flowing again |")
        print("|---|---|---|")
        for r in results:
            mark = "" if r["recovered"] else " (not within 10 min)"
            print(f"| {r['fault']} | {r['component_back_s']} s | {r['rows_again_s']} s{mark} |")
        print(
            f"rows: {count:,} of {total_unique:,} unique produced; lost {summary['lost']}, doubled {summary['doubled']}"
        )
        return 0 if summary["lost"] == summary["doubled"] == 0 and all(r["recovered"] for r in results) else 1
    finally:
        if producer is not None and producer.is_alive():
            producer.terminate()
        copy_job_logs(stack.var_dir / "runs", out / "job-logs")
        log("stopping the stack")
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
