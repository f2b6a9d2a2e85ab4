"""Avro vs JSON in the engine's parse step, on the same events (run by hand, not a test).

    .venv/bin/python bench/avro_bench.py --events 1000000 --rounds 5

Builds N events (the shape of bench/engine_bench.py's: an id, a nested user id, an e-mail, an amount, a time),
encodes each as JSON and as Avro in the Confluent wire format (fastavro + the 5-byte header), and caches both
as Kafka-like rows in Spark's memory. Then, alternating JSON and Avro in each round so that both see the same
machine load, it times the parse step alone (`transforms.parse_events` vs `avro_decode.parse_avro`, the
pipeline's typed field columns and dead-letter reason) into Spark's `noop` sink. Prints the medians, the
Avro/JSON ratio, the bytes per event of each encoding, and the load average before and after.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCHEMA = {
    "type": "record",
    "name": "Event",
    "fields": [
        {"name": "event_id", "type": "string"},
        {"name": "user", "type": {"type": "record", "name": "User", "fields": [{"name": "id", "type": "string"}]}},
        {"name": "email", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
FIELDS = [
    ("event_id", "string"),
    ("user.id", "string"),
    ("email", "string"),
    ("amount", "float"),
    ("created_at", "datetime"),
]


def events(n: int) -> list[dict]:
    base = datetime(2026, 11, 25, tzinfo=UTC)
    return [
        {
            "event_id": f"evt-{k:09d}",
            "user": {"id": str(uuid.UUID(int=k + 1))},
            "email": f"user{k % 5000}@example{k % 7}.com",
            "amount": round((k % 10000) / 7, 2),
            "created_at": base + timedelta(milliseconds=k),
        }
        for k in range(n)
    ]


def encode(records: list[dict]) -> tuple[list[bytes], list[bytes]]:
    import fastavro

    from spark_jobs.avro_schema import wire_format

    parsed = fastavro.parse_schema(SCHEMA)
    as_json, as_avro = [], []
    for record in records:
        as_json.append(json.dumps({**record, "created_at": record["created_at"].isoformat()}).encode())
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        as_avro.append(wire_format(1, out.getvalue()))
    return as_json, as_avro


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))

    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType, TimestampType

    from spark_jobs.avro_decode import parse_avro
    from spark_jobs.avro_schema import WriterSchemas
    from spark_jobs.pipeline import build_session
    from spark_jobs.transforms import Field, parse_events

    load_before = os.getloadavg()
    as_json, as_avro = encode(events(args.events))
    conf = {"spark.ui.enabled": "false", "spark.driver.memory": "2g"}
    spark = build_session(app_name="avro-bench", master=args.master, conf=conf)
    spark.sparkContext.setLogLevel("WARN")
    schema = StructType(
        [
            StructField("_cf_value", BinaryType()),
            StructField("_kafka_topic", StringType()),
            StructField("_kafka_partition", LongType()),
            StructField("_kafka_offset", LongType()),
            StructField("_kafka_timestamp", TimestampType()),
        ]
    )
    now = datetime.now(UTC)
    work = Path(tempfile.mkdtemp(prefix="avro-bench-"))

    def cached(name: str, values: list[bytes]):
        """The rows through a Parquet file (a million rows do not fit through createDataFrame's pickles)."""
        table = pa.table(
            {
                "_cf_value": pa.array(values, pa.binary()),
                "_kafka_topic": pa.array(["bench"] * len(values)),
                "_kafka_partition": pa.array([i % 2 for i in range(len(values))], pa.int64()),
                "_kafka_offset": pa.array(range(len(values)), pa.int64()),
                "_kafka_timestamp": pa.array([now] * len(values), pa.timestamp("us", tz="UTC")),
            }
        )
        pq.write_table(table, work / f"{name}.parquet")
        df = spark.read.schema(schema).parquet(str(work / f"{name}.parquet")).repartition(2).cache()
        df.count()
        return df

    json_rows, avro_rows = cached("json", as_json), cached("avro", as_avro)
    fields = [Field(path, kind) for path, kind in FIELDS]
    steps = {
        "json": lambda: parse_events(json_rows, fields),
        "avro": lambda: parse_avro(avro_rows, fields, WriterSchemas({1: json.dumps(SCHEMA)})),
    }
    # Both give the same rows (nothing dead-lettered): the comparison is of equal work.
    for name, step in steps.items():
        bad = step().where("_cf_error IS NOT NULL").count()
        assert bad == 0, f"{name}: {bad} dead letters"
    seconds: dict[str, list[float]] = {name: [] for name in steps}
    for round_number in range(args.rounds):
        for name in steps if round_number % 2 == 0 else reversed(list(steps)):
            started = time.perf_counter()
            steps[name]().write.format("noop").mode("overwrite").save()
            seconds[name].append(time.perf_counter() - started)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)

    medians = {name: statistics.median(values) for name, values in seconds.items()}
    print(f"events: {args.events:,}, rounds: {args.rounds}, master: {args.master}")
    print(
        f"bytes per event: json {statistics.mean(map(len, as_json)):.0f}, avro {statistics.mean(map(len, as_avro)):.0f}"
    )
    for name, median in medians.items():
        runs = ", ".join(f"{s:.2f}" for s in seconds[name])
        print(f"{name}: median {median:.2f} s = {args.events / median:,.0f} events/s  (runs: {runs})")
    print(f"avro/json time ratio: {medians['avro'] / medians['json']:.2f}  (below 1: Avro parses faster)")
    print(f"load average before {load_before[0]:.1f}, after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
