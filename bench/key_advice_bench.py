"""Key advice benchmark (run by hand, not a test).

    .venv/bin/python bench/key_advice_bench.py --events 200000 --max-events 50000 --runs 3

Starts its own Apache Kafka broker (unless --bootstrap is given), loads N demo-like sign-up events
(localstack.demo_data.make_event, about 350 B; 10% re-sent 1-30 s later, record timestamps set) into a
2-partition topic, then in the same run, --runs times each:
1. the raw confluent-kafka read of the same newest `max-events` events (assign at end - share, touch each
   value): the ceiling;
2. `analyze_duplicates(..., keys=["event_id"])`: events scanned per second of its whole call.
Also the parse rate of the two JSON parsers on these events (pulling two fields), the reason for orjson.
Prints each run and the medians.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def load(bootstrap: str, topic: str, events: int, partitions: int) -> list[bytes]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from localstack.demo_data import make_event

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=partitions)]).values():
        future.result(timeout=10)
    rng = random.Random(7)
    base_ms = int(time.time() * 1000) - events * 10
    records = []
    originals = int(events / 1.1)
    for i in range(originals):
        records.append((base_ms + i * 10, json.dumps(make_event(rng)).encode()))
    for _ in range(events - originals):
        at, value = records[rng.randrange(originals)]
        records.append((at + rng.randint(1_000, 30_000), value))
    records.sort(key=lambda r: r[0])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000})
    for n, (at, value) in enumerate(records):
        while True:
            try:
                producer.produce(topic, value=value, partition=n % partitions, timestamp=at)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0
    return [value for _at, value in records[:50_000]]


def raw_read(bootstrap: str, topic: str, partitions: int, count: int) -> tuple[float, float]:
    """events per second and per CPU second of a plain read of the newest `count` events (the same ranges
    the advisor reads)."""
    from confluent_kafka import Consumer, TopicPartition

    from webapp.connections.recent_events import fair_shares

    started, cpu = time.monotonic(), time.process_time()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5) for p in range(partitions)]
    shares = fair_shares([high - low for low, high in ends], count)
    consumer.assign([TopicPartition(topic, p, ends[p][1] - shares[p]) for p in range(partitions)])
    seen = size = 0
    while seen < count:
        for message in consumer.consume(2_000, timeout=1):
            if message.error() is None:
                seen += 1
                size += len(message.value())
    consumer.close()
    return seen / (time.monotonic() - started), seen / (time.process_time() - cpu)


def parse_rates(values: list[bytes]) -> dict[str, float]:
    import orjson

    rates = {}
    for name, loads in (("json", json.loads), ("orjson", orjson.loads)):
        started = time.perf_counter()
        for value in values:
            obj = loads(value)
            obj.get("event_id")
            obj.get("created_at")
        rates[name] = len(values) / (time.perf_counter() - started)
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--max-events", type=int, default=50_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bootstrap", help="use this broker instead of starting one")
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
    django.setup()
    from clearflow_spec.connections import KafkaConnectionSpec
    from localstack import processes, service_defs
    from webapp.connections.key_advice import analyze_duplicates

    workdir = Path(tempfile.mkdtemp(prefix="clearflow-advisor-bench-"))
    with processes.ProcessGroup(workdir / "logs") as group:
        bootstrap = args.bootstrap
        if not bootstrap:
            port = processes.free_port()
            group.start(service_defs.kafka_broker(port=port, data_dir=workdir / "kafka"))
            bootstrap = f"127.0.0.1:{port}"
        topic = f"advisor-bench-{uuid.uuid4().hex[:8]}"
        started = time.monotonic()
        values = load(bootstrap, topic, args.events, args.partitions)
        log(f"loaded {args.events:,} events into {topic} in {time.monotonic() - started:.1f}s")
        rates = parse_rates(values)
        log("parse, two fields pulled: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in rates.items()))
        settings = KafkaConnectionSpec(bootstrap_servers=bootstrap)
        rows = []  # (raw events/s, raw events/CPU-s, advisor events/s, advisor events/CPU-s)
        for run in range(1, args.runs + 1):
            raw, raw_cpu = raw_read(bootstrap, topic, args.partitions, args.max_events)
            cpu = time.process_time()
            result = analyze_duplicates(settings, topics=[topic], keys=["event_id"], max_events=args.max_events)
            rate, rate_cpu = result.scanned / (result.elapsed_ms / 1000), result.scanned / (time.process_time() - cpu)
            rows.append((raw, raw_cpu, rate, rate_cpu))
            log(
                f"run {run}: raw read {raw:,.0f} events/s ({raw_cpu:,.0f}/CPU-s); advisor {result.scanned:,} events "
                f"in {result.elapsed_ms:,} ms = {rate:,.0f} events/s ({rate_cpu:,.0f}/CPU-s) (share "
                f"{result.duplicate_share:.1%}, window {result.recommended_window}, complete {result.complete})"
            )
        raw, raw_cpu, rate, rate_cpu = (statistics.median(column) for column in zip(*rows, strict=True))
        log(
            f"median: raw read {raw:,.0f} events/s ({raw_cpu:,.0f}/CPU-s), advisor {rate:,.0f} events/s "
            f"({rate_cpu:,.0f}/CPU-s); advisor / raw {rate / raw:.2f} ({rate_cpu / raw_cpu:.2f} per CPU-s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
