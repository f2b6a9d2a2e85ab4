"""Duplicate audit benchmark (run by hand, not a test).

    .venv/bin/python bench/audit_bench.py [--rows 10000000] [--runs 5]

Starts the local stack's real ClickHouse server (chDB's, as `make up` and the tests do) on a free port, creates
a table with the engine's own DDL (`spark_jobs.sink.create_table_sql`: the `_cf_ingested_at` column and its
minmax index), and fills it server-side with `--rows` rows spread evenly over the last 24 hours (one insert per
hour, as a running pipeline writes them), one key in a hundred twice. The caches that would make repeated
runs faster than the first (query cache, query condition cache) are off. Then it runs the audit's query exactly as the
audit builds it (`webapp.audits.queries.duplicate_sql`) through the same choke point (readonly, server-side
parameters), over the last hour and with no time bound, `--runs` times each, and prints the median time and
what the server's response summary says it read (read_rows, read_bytes) and its peak memory, for each.
A second table, the same rows without the minmax index, shows what the index saves.

    .venv/bin/python bench/audit_bench.py --paced [--rows 72000000] [--max-rows-per-second 2000000]

--paced: what the check costs the machine, and what its pace (`CLEARFLOW_AUDIT_MAX_ROWS_PER_SECOND`, ClickHouse's
`max_execution_speed`) changes. One table with `--rows` UUID keys ingested over the last hour (a full 1-hour window
at 20,000 events/s is 72M), then the audit's query over the hour at full speed and at the given pace, twice each,
while the server's CPU is read from /proc every 0.25 s: the time, the CPU-seconds, the busiest second (cores),
how many seconds it held more than one core, and the peak memory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import clickhouse_connect
from cpu_watch import _own_seconds

from localstack import processes, service_defs
from spark_jobs.sink import TableSpec, create_table_sql
from webapp.audits.queries import duplicate_sql

KEYS = ["order_id"]
COLUMNS = (("order_id", "String"), ("seq", "Int64"), ("amount", "Float64"), ("customer_name", "Nullable(String)"))


def fill(client, database: str, table: str, rows: int) -> None:
    hours = 24
    per_hour = rows // hours
    for hour in range(hours):
        start = hour * per_hour
        # intDiv(n * 99, 100): one key in a hundred comes twice, in consecutive rows (the same hour).
        client.command(
            f"INSERT INTO `{database}`.`{table}` (order_id, seq, amount, customer_name, _cf_ingested_at) "
            "SELECT toString(cityHash64(intDiv(number * 99, 100))), number, number / 100, NULL, "
            f"now64(3) - INTERVAL {hours - hour} HOUR "
            f"+ toIntervalMillisecond(intDiv((number - {start}) * 3600000, {per_hour})) "
            f"FROM numbers({start}, {per_hour})"
        )


def measure(client, sql: str, window: int, runs: int) -> dict:
    times, summaries = [], []
    for _ in range(runs):
        started = time.perf_counter()
        result = client.query(
            sql,
            parameters={"window_seconds": window},
            settings={"readonly": 2, "use_query_cache": 0, "use_query_condition_cache": 0},
        )
        times.append((time.perf_counter() - started) * 1000)
        summaries.append(result.summary)
    last = summaries[-1]
    return {
        "median_ms": round(statistics.median(times)),
        "runs_ms": [round(t) for t in times],
        "duplicate_keys": result.result_rows[0][0],
        "read_rows": int(last.get("read_rows", 0)),
        "read_bytes": int(last.get("read_bytes", 0)),
        "memory_usage": int(last.get("memory_usage", 0) or 0),
        "summary": last,
    }


def _process_cpu_seconds(pid: int) -> float:
    """User + system CPU-seconds of every thread of `pid` (a thread that ends meanwhile is left out)."""
    total = 0.0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            total += _own_seconds(f"/proc/{pid}/task/{task}/stat")[1]
    return total


def paced(client, pid: int, rows: int, max_rows_per_second: int) -> None:
    database, table = "audit_bench", "events"
    columns = (("id", "UUID"), ("seq", "Int64"))
    client.command(create_table_sql(TableSpec(database, table, f"{table}_dlq", "MergeTree", ("id",), columns, 1000)))
    per_minute = rows // 60
    started = time.perf_counter()
    for minute in range(60):  # one insert a minute of the last hour, as a running pipeline spreads them
        first = minute * per_minute
        client.command(
            f"INSERT INTO {database}.{table} (id, seq, _cf_ingested_at) SELECT generateUUIDv4(number), number, "
            f"now64(3) - INTERVAL {60 - minute} MINUTE "
            f"+ toIntervalMillisecond(intDiv((number - {first}) * 60000, {per_minute})) "
            f"FROM numbers({first}, {per_minute})"
        )
    while client.query("SELECT count() FROM system.merges").result_rows[0][0]:
        time.sleep(1)  # the background merges would be counted as the audit's CPU
    print(f"{rows:,} rows inserted (and merged) in {time.perf_counter() - started:.0f} s")
    for label, pace in (("full speed", 0), (f"{max_rows_per_second:,} rows/s", max_rows_per_second)):
        sql = duplicate_sql(
            database=database,
            table=table,
            key_columns=["id"],
            time_column="_cf_ingested_at",
            max_execution_time=600,
            max_rows_per_second=pace,
        )
        for _ in range(2):
            quarters: list[float] = []
            done = threading.Event()

            def watch(quarters: list[float] = quarters, done: threading.Event = done) -> None:
                last = _process_cpu_seconds(pid)
                while not done.wait(0.25):
                    now = _process_cpu_seconds(pid)
                    quarters.append(now - last)
                    last = now

            watcher = threading.Thread(target=watch)
            cpu_before, started = _process_cpu_seconds(pid), time.perf_counter()
            watcher.start()
            result = client.query(
                sql, parameters={"window_seconds": 3600}, settings={"readonly": 2, "use_query_cache": 0}
            )
            elapsed, cpu = time.perf_counter() - started, _process_cpu_seconds(pid) - cpu_before
            done.set()
            watcher.join()
            seconds = [sum(quarters[i : i + 4]) for i in range(0, max(1, len(quarters) - 3))]
            print(
                f"{label}: {elapsed:.1f} s, {cpu:.1f} CPU-seconds, busiest second {max(seconds, default=0):.2f} "
                f"cores, {sum(q > 0.25 for q in quarters) / 4:.2f} s above one core, "
                f"peak memory {int(result.summary.get('memory_usage', 0) or 0) / 1e6:,.0f} MB, "
                f"duplicate keys {result.result_rows[0][0]}"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--paced", action="store_true", help="the check's CPU at full speed and at a pace")
    parser.add_argument("--max-rows-per-second", type=int, default=2_000_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cf-audit-bench-"))
    with processes.ProcessGroup(work / "logs") as group:
        port = processes.free_port()
        server = group.start(service_defs.clickhouse(port=port, data_dir=work / "data"))
        client = clickhouse_connect.get_client(host="127.0.0.1", port=port, send_receive_timeout=600)
        database = "audit_bench"
        client.command(f"CREATE DATABASE IF NOT EXISTS {database}")
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        if args.paced:
            paced(client, server.process.pid, args.rows, args.max_rows_per_second)
            print(f"load average after: {os.getloadavg()[0]:.1f}")
            return
        for table, with_index in (("orders", True), ("orders_no_index", False)):
            ddl = create_table_sql(
                TableSpec(database, table, f"{table}_dlq", "MergeTree", ("order_id",), COLUMNS, 1000)
            )
            if not with_index:
                ddl = ddl.replace(",\n  INDEX `_cf_ingested_at_minmax` `_cf_ingested_at` TYPE minmax GRANULARITY 1", "")
            client.command(ddl)
            started = time.perf_counter()
            fill(client, database, table, args.rows)
            print(f"{table}: {args.rows:,} rows inserted in {time.perf_counter() - started:.0f} s")
            bounded = duplicate_sql(
                database=database, table=table, key_columns=KEYS, time_column="_cf_ingested_at", max_execution_time=600
            )
            unbounded = duplicate_sql(
                database=database, table=table, key_columns=KEYS, time_column=None, max_execution_time=600
            )
            for label, sql in (("last hour", bounded), ("no time bound", unbounded)):
                figures = measure(client, sql, 3600, args.runs)
                print(f"{table}, {label}: " + json.dumps({k: v for k, v in figures.items() if k != "summary"}))
                print(f"    summary: {figures['summary']}")
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        client.close()


if __name__ == "__main__":
    main()
