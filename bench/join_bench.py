"""Join benchmark (run by hand, not a test): orders joined with payments under a steady load.

    nice -n 19 .venv/bin/python bench/join_bench.py --rate 10000 --window 30m --minutes 10
    nice -n 19 .venv/bin/python bench/join_bench.py --rate 1000 --minutes 2        # a smoke run

Starts its own Apache Kafka broker and ClickHouse (chDB) unless --bootstrap/--clickhouse are given, then the job
(`python -m spark_jobs.run`, local[2], a processing-time trigger) for a spec joining `orders` (left, dedup on
order_id) with `payments` (right, dedup on payment_id) on order_id within --window, inner join. A producer sends
--rate orders/s and --rate payments/s (so 2 x rate events/s), each payment 0 to --pay-delay seconds after its
order, 5% of each side sent twice (the dedup drops the copy). Every order is paid: the expected rows are the
orders produced.

Reported every minute and at the end (summary.json in --out):
- rows/s: joined rows written per second (ClickHouse count over the minute);
- p50/p95 produced -> visible: `visible_at` (the table's `DEFAULT now64(3)`: ClickHouse's clock when the insert
  carrying the row arrived) minus the Kafka timestamp of the payment (the later event of the pair, written by the
  job from `right._kafka_timestamp`), over the rows that became visible in the minute;
- state: the size on disk of the checkpoint's `state` directory (both dedups and the join);
- lag: the job's last metrics line (`clearflow.metrics`), and the job's RSS.
At the end, once the job has caught up: the exact-rows check (count() and uniqExact(order_id) against the orders
produced).
"""

from __future__ import annotations

import argparse
import heapq
import json
import multiprocessing
import os
import random
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench_pipeline import REPO, JobProcess, job_argv, log


def join_bench_spec(*, bootstrap: str, clickhouse: tuple[str, int], orders: str, payments: str, window: str) -> dict:
    kafka = {"bootstrap_servers": bootstrap}
    return {
        "version": 2,
        "name": f"join-bench-{uuid.uuid4().hex[:6]}",
        "source": {
            "kafka": kafka,
            "topics": [orders],
            "fields": [
                {"path": "order_id", "type": "string"},
                {"path": "customer", "type": "string"},
                {"path": "amount", "type": "float"},
            ],
            "max_records_per_batch": 200_000,
        },
        "dedup": {"keys": ["order_id"], "window": window},
        "join": {
            "source": {
                "kafka": kafka,
                "topics": [payments],
                "fields": [
                    {"path": "payment_id", "type": "string"},
                    {"path": "order_id", "type": "string"},
                    {"path": "paid", "type": "float"},
                ],
                "max_records_per_batch": 200_000,
            },
            "dedup": {"keys": ["payment_id"], "window": window},
            "keys": [{"left": "order_id", "right": "order_id"}],
            "window": window,
            "type": "inner",
        },
        "sink": {
            "clickhouse": {"host": clickhouse[0], "port": clickhouse[1]},
            "table": f"join_bench_{uuid.uuid4().hex[:6]}",
            "order_by": ["order_id"],
            "columns": [
                {"field": "left.order_id", "column": "order_id", "type": "String"},
                {"field": "left.customer", "column": "customer", "type": "String"},
                {"field": "left.amount", "column": "amount", "type": "Float64"},
                {"field": "right.payment_id", "column": "payment_id", "type": "String"},
                {"field": "right.paid", "column": "paid", "type": "Float64"},
                {"field": "right._kafka_timestamp", "column": "paid_at", "type": "DateTime64(3, 'UTC')"},
            ],
        },
    }


def produce_pairs(bootstrap: str, orders: str, payments: str, rate: int, seconds: float, pay_delay: float, out: Any):
    """`rate` orders/s and as many payments (each `pay_delay` s at most after its order); 5% sent twice.
    Puts the number of unique orders produced into the queue `out` at the end."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 2_000_000})
    rng = random.Random(7)
    pending: list[tuple[float, bytes]] = []  # a heap of (due, payment)
    started = time.monotonic()
    sent = 0
    while True:
        elapsed = time.monotonic() - started
        if elapsed >= seconds and not pending:
            break
        due = int(rate * min(elapsed, seconds)) - sent
        for _ in range(max(0, due)):
            order_id = f"o{sent:010d}"
            order = json.dumps({"order_id": order_id, "customer": f"c{sent % 5000}", "amount": sent % 997}).encode()
            producer.produce(orders, order)
            if sent % 20 == 0:
                producer.produce(orders, order)  # a duplicate order
            payment = json.dumps({"payment_id": f"p{order_id}", "order_id": order_id, "paid": sent % 997}).encode()
            heapq.heappush(pending, (elapsed + rng.uniform(0, pay_delay), payment))
            sent += 1
        while pending and pending[0][0] <= elapsed:
            _, payment = heapq.heappop(pending)
            producer.produce(payments, payment)
            if rng.random() < 0.05:
                producer.produce(payments, payment)  # a duplicate payment
        producer.poll(0)
        time.sleep(0.005)
    producer.flush(60)
    out.put(sent)


def state_bytes(checkpoint: Path) -> int:
    return sum(p.stat().st_size for p in (checkpoint / "state").rglob("*") if p.is_file())


def minute_figures(client: Any, table: str, start: float, end: float) -> dict[str, Any]:
    """Rows made visible in [start, end) (epoch seconds) and their p50/p95 produced -> visible."""
    rows, p50, p95 = client.query(
        f"SELECT count(), quantile(0.5)(lat), quantile(0.95)(lat) FROM (SELECT "
        f"dateDiff('millisecond', paid_at, _cf_ingested_at) AS lat FROM {table} "
        "WHERE _cf_ingested_at >= fromUnixTimestamp64Milli({s:Int64}) "
        "AND _cf_ingested_at < fromUnixTimestamp64Milli({e:Int64}))",
        parameters={"s": int(start * 1000), "e": int(end * 1000)},
    ).result_rows[0]
    return {"rows": rows, "rows_per_s": round(rows / (end - start), 1), "p50_ms": p50, "p95_ms": p95}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=10_000, help="orders/s, and as many payments/s")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--window", default="30m")
    parser.add_argument("--pay-delay", type=float, default=60.0, help="seconds, at most, from order to payment")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--trigger-interval", default="1 second")
    parser.add_argument("--bootstrap")
    parser.add_argument("--clickhouse", help="host:port of ClickHouse HTTP")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    import clickhouse_connect
    from confluent_kafka.admin import AdminClient, NewTopic

    from localstack import processes

    workdir = Path(tempfile.mkdtemp(prefix="clearflow-join-bench-"))
    out_dir = Path(args.out) if args.out else workdir
    out_dir.mkdir(parents=True, exist_ok=True)
    with processes.ProcessGroup(workdir / "logs") as group:
        services: dict[str, int] = {}
        bootstrap = args.bootstrap
        if not bootstrap:
            port = processes.free_port()
            services["broker"] = group.start(processes.kafka_broker(port=port, data_dir=workdir / "kafka")).process.pid
            bootstrap = f"127.0.0.1:{port}"
        if args.clickhouse:
            host, ch_port = args.clickhouse.rsplit(":", 1)
        else:
            host, ch_port = "127.0.0.1", str(processes.free_port())
            services["clickhouse"] = group.start(
                processes.clickhouse(port=int(ch_port), data_dir=workdir / "chdata")
            ).process.pid
        client = clickhouse_connect.get_client(host=host, port=int(ch_port))
        suffix = uuid.uuid4().hex[:6]
        orders, payments = f"orders_{suffix}", f"payments_{suffix}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(t, args.partitions, 1) for t in (orders, payments)]).values():
            future.result(timeout=30)
        spec = join_bench_spec(
            bootstrap=bootstrap, clickhouse=(host, int(ch_port)), orders=orders, payments=payments, window=args.window
        )
        table = spec["sink"]["table"]
        spec_file, checkpoint = workdir / "spec.json", workdir / "checkpoint"
        spec_file.write_text(json.dumps(spec))
        argv = [*job_argv(spec_file, checkpoint, []), "--trigger-interval", args.trigger_interval]
        job = JobProcess(argv, workdir / "job.log", dict(os.environ), services)
        log(f"job started; waiting for its table {table}")
        while not client.command(f"EXISTS TABLE {table}"):
            if job.process.poll() is not None:
                raise SystemExit(f"the job ended: see {workdir / 'job.log'}")
            time.sleep(1)
        produced: Any = multiprocessing.Queue()
        producer = multiprocessing.Process(
            target=produce_pairs,
            args=(bootstrap, orders, payments, args.rate, args.minutes * 60, args.pay_delay, produced),
        )
        started = time.time()
        producer.start()
        minutes = []
        try:
            while producer.is_alive():
                end = started + 60 * (len(minutes) + 1)
                time.sleep(max(0.0, end + 5 - time.time()))  # the minute's last inserts committed
                figures = minute_figures(client, table, end - 60, end)
                figures |= {"minute": len(minutes) + 1, "state_mb": round(state_bytes(checkpoint) / 1e6, 1)}
                figures["rss_mb"] = round(job.peak / 1e6)
                minutes.append(figures)
                log(json.dumps(figures))
            unique = produced.get(timeout=60)
            deadline = time.time() + 1800
            while client.command(f"SELECT count() FROM {table}") < unique and time.time() < deadline:
                time.sleep(5)
            total, distinct = client.query(f"SELECT count(), uniqExact(order_id) FROM {table}").result_rows[0]
            whole = minute_figures(client, table, started, time.time())
        finally:
            os.killpg(job.process.pid, signal.SIGTERM)
            job.wait(timeout=120)
        summary = {
            "command": " ".join(sys.argv),
            "rate_per_side": args.rate,
            "window": args.window,
            "minutes": minutes,
            "orders_produced": unique,
            "rows": total,
            "distinct_orders": distinct,
            "exact": total == distinct == unique,
            "p95_ms_all": whole["p95_ms"],
            "state_mb_end": round(state_bytes(checkpoint) / 1e6, 1),
            "peak_rss_mb": round(job.peak / 1e6),
        }
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        log(json.dumps(summary))


if __name__ == "__main__":
    main()
