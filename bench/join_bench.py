"""Join benchmark (run by hand, not a test): orders joined with payments under a steady load.

    .venv/bin/python bench/join_bench.py --rate 10000 --window 30m --minutes 10 --out var/bench/join-10k
    nice -n 19 .venv/bin/python bench/join_bench.py --rate 500 --minutes 2        # a smoke run

Starts its own Apache Kafka broker and ClickHouse (chDB) unless --bootstrap/--clickhouse are given, then the job
(`python -m spark_jobs.run`, local[2], a processing-time trigger) for a spec joining `orders` (left, dedup on
order_id) with `payments` (right, dedup on payment_id) on order_id within --window, inner join. Once the job's
query has started, a producer process sends --rate orders/s and --rate payments/s (so 2 x rate events/s) for --minutes,
each payment 0 to --pay-delay seconds after its order; 1 order in 20 and about 1 payment in 20 are sent twice (the
dedups drop the copies). Every order is paid: the expected rows are one (order, its payment) pair per order.

Each minute one line (and `minutes` in summary.json, in --out):
- produced/s: events sent in the minute (both topics, duplicates included), as the producer counted them;
- rows/s: joined rows that became visible in the minute (their `_cf_ingested_at`, the `DEFAULT now64(3)` column of
  every table ClearFlow creates: ClickHouse's clock when the insert carrying the row arrived);
- p50/p95 produced -> visible, over those rows: `_cf_ingested_at` minus the payment's Kafka timestamp (the later
  event of the pair; the producer's clock at produce(), written by the job from `right._kafka_timestamp`);
- the job's own metrics for the batches that ended in the minute (its `clearflow.metrics` log lines): batches,
  mean and max duration, events read per second, lag at the end, and the state's keys (both dedups' keys and the
  events the join holds);
- state bytes on disk (the checkpoint's `state` directory), the job's RSS, and the machine's load average.
At the end, once the job has caught up (or --catch-up-minutes have passed): the exactness check, which holds
when every expected pair is there once and nothing else is (count, distinct orders and distinct payments equal
the orders produced, and every row pairs an order with its own payment).
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

from bench_pipeline import REPO, JobProcess, job_argv, log, patient
from soak_series import state_disk_bytes

METRICS_LOGGER = " clearflow.metrics "  # spark_jobs.metrics logs each batch's record as one JSON line


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


def produce_pairs(
    bootstrap: str,
    orders: str,
    payments: str,
    rate: int,
    seconds: float,
    pay_delay: float,
    sent_events: Any,
    out: Any,
) -> None:
    """`rate` orders/s for `seconds`, and a payment for each `pay_delay` s at most after its order; 1 order in 20
    and about 1 payment in 20 sent twice. `sent_events` (a shared counter) counts every event sent; the number of
    orders (each paid once) and of events Kafka did not take (0, or the exactness check means nothing) go into
    the queue `out` at the end."""
    from confluent_kafka import Producer

    failed = 0

    def delivered(error: Any, _message: Any) -> None:
        nonlocal failed
        if error is not None:
            failed += 1

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 2_000_000,
            "compression.type": "lz4",
            # A request the loaded broker answers late is retried without writing its events twice.
            "enable.idempotence": True,
            "delivery.timeout.ms": 600_000,
            "on_delivery": delivered,
        }
    )
    rng = random.Random(7)
    pending: list[tuple[float, int]] = []  # a heap of (due, order number)
    started = time.monotonic()
    orders_sent = events = 0

    def send(topic: str, value: bytes) -> None:
        nonlocal events
        while True:
            try:
                producer.produce(topic, value)
                events += 1
                return
            except BufferError:  # the local queue is full: let librdkafka deliver some
                producer.poll(0.05)

    while True:
        elapsed = time.monotonic() - started
        if elapsed >= seconds and not pending:
            break
        due = int(rate * min(elapsed, seconds)) - orders_sent
        for _ in range(max(0, due)):
            n = orders_sent
            order = f'{{"order_id":"o{n:010d}","customer":"c{n % 5000}","amount":{n % 997}}}'.encode()
            send(orders, order)
            if n % 20 == 0:
                send(orders, order)  # a duplicate order
            heapq.heappush(pending, (elapsed + rng.uniform(0, pay_delay), n))
            orders_sent += 1
        while pending and pending[0][0] <= elapsed:
            _, n = heapq.heappop(pending)
            payment = f'{{"payment_id":"po{n:010d}","order_id":"o{n:010d}","paid":{n % 997}}}'.encode()
            send(payments, payment)
            if rng.random() < 0.05:
                send(payments, payment)  # a duplicate payment
        sent_events.value = events
        producer.poll(0)
        time.sleep(0.002)
    producer.flush(600)
    sent_events.value = events
    out.put((orders_sent, failed + len(producer)))


def job_metrics(log_file: Path) -> list[dict[str, Any]]:
    """The job's metrics records so far (one JSON line per batch in its log)."""
    records = []
    with open(log_file, errors="replace") as f:
        for line in f:
            at = line.find(METRICS_LOGGER)
            if at != -1:
                try:
                    records.append(json.loads(line[at + len(METRICS_LOGGER) :]))
                except ValueError:
                    continue
    return records


def batch_end(record: dict[str, Any]) -> float:
    """Epoch seconds when the batch ended (its start plus its duration)."""
    from spark_jobs.metrics import timestamp_ms

    return ((timestamp_ms(record.get("timestamp", "")) or 0) + int(record.get("batch_duration_ms") or 0)) / 1000


def batch_figures(records: list[dict[str, Any]], start: float, end: float) -> dict[str, Any]:
    """The job's batches that ended in [start, end): how many, their durations, what they read, lag and state."""
    batches = [r for r in records if start <= batch_end(r) < end]
    durations = [int(r.get("batch_duration_ms") or 0) for r in batches]
    last = batches[-1] if batches else (records[-1] if records else {})
    return {
        "batches": len(batches),
        "batch_ms_mean": round(sum(durations) / len(durations)) if durations else None,
        "batch_ms_max": max(durations, default=None),
        "read_per_s": round(sum(int(r.get("input_rows") or 0) for r in batches) / (end - start)),
        "lag": last.get("total_lag"),
        "state_keys": last.get("state_rows"),
    }


def visible_figures(client: Any, table: str, start: float, end: float) -> dict[str, Any]:
    """Rows made visible in [start, end) (epoch seconds), and their p50/p95 produced -> visible."""
    rows, p50, p95 = client.query(
        f"SELECT count(), quantile(0.5)(lat), quantile(0.95)(lat) FROM (SELECT "
        f"dateDiff('millisecond', paid_at, _cf_ingested_at) AS lat FROM `{table}` "
        "WHERE _cf_ingested_at >= fromUnixTimestamp64Milli({s:Int64}) "
        "AND _cf_ingested_at < fromUnixTimestamp64Milli({e:Int64}))",
        parameters={"s": int(start * 1000), "e": int(end * 1000)},
    ).result_rows[0]
    if rows == 0:  # the quantiles of nothing are nan
        return {"rows": 0, "rows_per_s": 0.0, "p50_ms": None, "p95_ms": None}
    return {"rows": rows, "rows_per_s": round(rows / (end - start), 1), "p50_ms": round(p50), "p95_ms": round(p95)}


def exactness(client: Any, table: str, orders: int) -> dict[str, Any]:
    """Every expected pair once and nothing else: the rows, distinct orders and distinct payments against the
    orders produced, and the rows whose payment is not their order's (`po<n>` belongs to `o<n>`)."""
    rows, distinct_orders, distinct_payments, mismatched = client.query(
        f"SELECT count(), uniqExact(order_id), uniqExact(payment_id), "
        f"countIf(payment_id != concat('p', order_id)) FROM `{table}`"
    ).result_rows[0]
    return {
        "orders_produced": orders,
        "rows": rows,
        "distinct_orders": distinct_orders,
        "distinct_payments": distinct_payments,
        "mismatched_pairs": mismatched,
        "exact": rows == distinct_orders == distinct_payments == orders and mismatched == 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=10_000, help="orders/s, and as many payments/s")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--window", default="30m")
    parser.add_argument("--pay-delay", type=float, default=60.0, help="seconds, at most, from order to payment")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--trigger-interval", default="1 second")
    parser.add_argument("--catch-up-minutes", type=float, default=10, help="at most, after the load, for the rest")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    parser.add_argument("--bootstrap")
    parser.add_argument("--clickhouse", help="host:port of ClickHouse HTTP")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    import clickhouse_connect
    from confluent_kafka.admin import AdminClient, NewTopic

    from clearflow_spec.sizing import ROCKSDB_MEMORY_CONF, join_rocksdb_memory_mb
    from clearflow_spec.spec_base import parse_window
    from localstack import processes, service_defs

    load_before = round(os.getloadavg()[0], 1)
    workdir = Path(tempfile.mkdtemp(prefix="clearflow-join-bench-"))
    out_dir = Path(args.out) if args.out else workdir
    out_dir.mkdir(parents=True, exist_ok=True)
    log(f"work directory {workdir}")
    with processes.ProcessGroup(workdir / "logs") as group:
        services: dict[str, int] = {}
        bootstrap = args.bootstrap
        if not bootstrap:
            port = processes.free_port()
            broker = patient(service_defs.kafka_broker(port=port, data_dir=workdir / "kafka"))
            services["broker"] = group.start(broker).process.pid
            bootstrap = f"127.0.0.1:{port}"
        if args.clickhouse:
            host, ch_port = args.clickhouse.rsplit(":", 1)
        else:
            host, ch_port = "127.0.0.1", str(processes.free_port())
            server = patient(service_defs.clickhouse(port=int(ch_port), data_dir=workdir / "chdata"))
            services["clickhouse"] = group.start(server).process.pid
        client = clickhouse_connect.get_client(host=host, port=int(ch_port))
        suffix = uuid.uuid4().hex[:6]
        orders, payments = f"orders_{suffix}", f"payments_{suffix}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(t, args.partitions, 1) for t in (orders, payments)]).values():
            future.result(timeout=60)
        spec = join_bench_spec(
            bootstrap=bootstrap, clickhouse=(host, int(ch_port)), orders=orders, payments=payments, window=args.window
        )
        table = spec["sink"]["table"]
        spec_file, checkpoint, job_log = workdir / "spec.json", workdir / "checkpoint", workdir / "job.log"
        spec_file.write_text(json.dumps(spec))
        conf = list(args.conf)
        if not any(item.startswith(f"{ROCKSDB_MEMORY_CONF}=") for item in conf):
            # RocksDB's bound as the worker sizes a join (clearflow_spec.job_sizing.job_resources): each side's
            # dedup keys over its window (the join's here) and the join's state.
            window_seconds = parse_window(args.window)
            bound = join_rocksdb_memory_mb(
                dedup_keys=2 * args.rate * window_seconds,
                events_per_second=2 * args.rate,
                window_seconds=window_seconds,
            )
            conf.append(f"{ROCKSDB_MEMORY_CONF}={bound}")
        log(f"Spark settings: {conf}")
        argv = [*job_argv(spec_file, checkpoint, conf), "--trigger-interval", args.trigger_interval]
        # As the worker starts a job (worker.jobs.job_env): two glibc malloc arenas, or RocksDB's allocations from
        # many task threads grow the RSS past its memory bound (the first 10k+10k run here, without it: 10 GB).
        env = {**os.environ, "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2")}
        job = JobProcess(argv, job_log, env, services)
        log(f"job started (log {job_log}); waiting for its query to start")
        # The query, not only the table (which the job creates while its Spark session starts): the load
        # starts when the job can read it, so the first minute measures the join, not the JVM's start.
        while "start step query" not in job_log.read_text(errors="replace"):
            if job.process.poll() is not None:
                raise SystemExit(f"the job ended: see {job_log}")
            time.sleep(1)
        sent: Any = multiprocessing.Value("q", 0)
        produced: Any = multiprocessing.Queue()
        producer = multiprocessing.Process(
            target=produce_pairs,
            args=(bootstrap, orders, payments, args.rate, args.minutes * 60, args.pay_delay, sent, produced),
        )
        started = time.time()
        producer.start()
        log(f"producing {args.rate} orders/s and {args.rate} payments/s for {args.minutes} min")
        minutes: list[dict[str, Any]] = []
        sent_before = 0
        caught_up = False
        try:
            while producer.is_alive() or not minutes:
                start, end = started + 60 * len(minutes), started + 60 * (len(minutes) + 1)
                time.sleep(max(0.0, end + 5 - time.time()))  # the minute's last inserts committed
                sent_now = sent.value
                figures: dict[str, Any] = {"minute": len(minutes) + 1, "produced_per_s": (sent_now - sent_before) // 60}
                sent_before = sent_now
                figures |= visible_figures(client, table, start, end)
                figures |= batch_figures(job_metrics(job_log), start, end)
                figures |= {
                    "state_mb": round((state_disk_bytes(checkpoint) or 0) / 1e6, 1),
                    "rss_mb": round(job.peak / 1e6),
                    "load_1m": round(os.getloadavg()[0], 1),
                }
                minutes.append(figures)
                log(json.dumps(figures))
                if job.process.poll() is not None:
                    raise SystemExit(f"the job ended: see {job_log}")
            orders_produced, undelivered = produced.get(timeout=900)
            load_ended = time.time()
            log(f"load done: {orders_produced} orders (and payments); waiting for the job to catch up")
            deadline = load_ended + args.catch_up_minutes * 60
            while time.time() < deadline:
                if client.command(f"SELECT count() FROM `{table}`") >= orders_produced:
                    caught_up = True
                    break
                time.sleep(5)
            caught_up_s = round(time.time() - load_ended, 1)
            time.sleep(5)  # a replayed or late insert would show now
            check = exactness(client, table, orders_produced)
            caught_up = check["rows"] >= orders_produced
            whole = visible_figures(client, table, started, time.time())
            records = job_metrics(job_log)
            final_state_bytes = state_disk_bytes(checkpoint) or 0
        finally:
            if producer.is_alive():
                producer.terminate()
            os.killpg(job.process.pid, signal.SIGTERM)
            job.wait(timeout=120)
        loaded = [m for m in minutes if m["minute"] <= args.minutes]
        durations = [int(r.get("batch_duration_ms") or 0) for r in records if int(r.get("input_rows") or 0) > 0]
        summary = {
            "command": " ".join(sys.argv),
            "rate_per_side": args.rate,
            "window": args.window,
            "minutes_of_load": args.minutes,
            "load_1m_before": load_before,
            "load_1m_end": round(os.getloadavg()[0], 1),
            "minutes": minutes,
            "produced_per_s_mean": round(sum(m["produced_per_s"] for m in loaded) / max(1, len(loaded))),
            "rows_per_s_mean": round(sum(m["rows_per_s"] for m in loaded) / max(1, len(loaded)), 1),
            "p95_ms_whole_run": whole["p95_ms"],
            "p50_ms_whole_run": whole["p50_ms"],
            "caught_up": caught_up,
            "caught_up_after_load_s": caught_up_s,
            "batches_with_data": len(durations),
            "batch_ms_median": sorted(durations)[len(durations) // 2] if durations else None,
            "state_keys_end": records[-1].get("state_rows") if records else None,
            "state_mb_end": round(final_state_bytes / 1e6, 1),
            "peak_rss_mb": round(job.peak / 1e6),
            "cpu_seconds": job.cpu_by_component(),
            "events_kafka_did_not_take": undelivered,
            **check,
        }
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        log(json.dumps({k: v for k, v in summary.items() if k != "minutes"}))


if __name__ == "__main__":
    main()
