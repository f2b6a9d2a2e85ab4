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
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import clickhouse_connect

from localstack import processes
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cf-audit-bench-"))
    with processes.ProcessGroup(work / "logs") as group:
        port = processes.free_port()
        group.start(processes.clickhouse(port=port, data_dir=work / "data"))
        client = clickhouse_connect.get_client(host="127.0.0.1", port=port, send_receive_timeout=600)
        database = "audit_bench"
        client.command(f"CREATE DATABASE IF NOT EXISTS {database}")
        print(f"load average before: {os.getloadavg()[0]:.1f}")
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
