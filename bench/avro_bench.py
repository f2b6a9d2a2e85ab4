"""Avro and Protobuf vs JSON in the engine's parse step, on the same events (run by hand, not a test).

    .venv/bin/python bench/avro_bench.py --events 1000000 --rounds 5

Builds N events (the shape of bench/engine_bench.py's: an id, a nested user id, an e-mail, an amount, a time),
encodes each as JSON, as Avro in the Confluent wire format (fastavro + the 5-byte header) and as Protobuf in the
Confluent wire format (the `protobuf` package + header + message index 0), and caches them as Kafka-like rows in
Spark's memory. Then, rotating the order in each round so that all see the same machine load, it times the parse
step alone (`transforms.parse_events`, `avro_decode.parse_avro`, `protobuf_decode.parse_protobuf`: the
pipeline's typed field columns and dead-letter reason) into Spark's `noop` sink. Prints the medians, the
ratios to JSON, the bytes per event of each encoding, and the load average before and after.
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
PROTO = """syntax = "proto3";
import "google/protobuf/timestamp.proto";
message Event {
  string event_id = 1;
  User user = 2;
  string email = 3;
  double amount = 4;
  google.protobuf.Timestamp created_at = 5;
  message User { string id = 1; }
}
"""
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


def event_class():
    """PROTO's `Event` message class, from a descriptor that says what PROTO says."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="event.proto", syntax="proto3", dependency=["google/protobuf/timestamp.proto"]
    )
    event = proto.message_type.add(name="Event")
    for name, number, kind, type_name in [
        ("event_id", 1, field.TYPE_STRING, ""),
        ("user", 2, field.TYPE_MESSAGE, ".Event.User"),
        ("email", 3, field.TYPE_STRING, ""),
        ("amount", 4, field.TYPE_DOUBLE, ""),
        ("created_at", 5, field.TYPE_MESSAGE, ".google.protobuf.Timestamp"),
    ]:
        added = event.field.add(name=name, number=number, type=kind, label=field.LABEL_OPTIONAL)
        if type_name:
            added.type_name = type_name
    event.nested_type.add(name="User").field.add(name="id", number=1, type=field.TYPE_STRING)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("Event"))


def encode(records: list[dict]) -> tuple[list[bytes], list[bytes], list[bytes]]:
    import fastavro

    from clearflow_spec.avro_schema import wire_format

    parsed = fastavro.parse_schema(SCHEMA)
    message = event_class()
    as_json, as_avro, as_protobuf = [], [], []
    for record in records:
        as_json.append(json.dumps({**record, "created_at": record["created_at"].isoformat()}).encode())
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        as_avro.append(wire_format(1, out.getvalue()))
        event = message(event_id=record["event_id"], email=record["email"], amount=record["amount"])
        event.user.id = record["user"]["id"]
        event.created_at.FromDatetime(record["created_at"])
        as_protobuf.append(wire_format(1, b"\x00" + event.SerializeToString()))  # b"\x00": message index 0
    return as_json, as_avro, as_protobuf


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

    from clearflow_spec.avro_schema import WriterSchemas
    from spark_jobs.avro_decode import parse_avro
    from spark_jobs.protobuf_decode import parse_protobuf
    from spark_jobs.session import build_session
    from spark_jobs.transforms import Field, parse_events

    load_before = os.getloadavg()
    as_json, as_avro, as_protobuf = encode(events(args.events))
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
    protobuf_rows = cached("protobuf", as_protobuf)
    fields = [Field(path, kind) for path, kind in FIELDS]
    steps = {
        "json": lambda: parse_events(json_rows, fields),
        "avro": lambda: parse_avro(avro_rows, fields, WriterSchemas({1: json.dumps(SCHEMA)})),
        "protobuf": lambda: parse_protobuf(protobuf_rows, fields, WriterSchemas({1: PROTO})),
    }
    # Both give the same rows (nothing dead-lettered): the comparison is of equal work.
    for name, step in steps.items():
        bad = step().where("_cf_error IS NOT NULL").count()
        assert bad == 0, f"{name}: {bad} dead letters"
    seconds: dict[str, list[float]] = {name: [] for name in steps}
    names = list(steps)
    for round_number in range(args.rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            steps[name]().write.format("noop").mode("overwrite").save()
            seconds[name].append(time.perf_counter() - started)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)

    medians = {name: statistics.median(values) for name, values in seconds.items()}
    print(f"events: {args.events:,}, rounds: {args.rounds}, master: {args.master}")
    sizes = {"json": as_json, "avro": as_avro, "protobuf": as_protobuf}
    print("bytes per event: " + ", ".join(f"{name} {statistics.mean(map(len, v)):.0f}" for name, v in sizes.items()))
    for name, median in medians.items():
        runs = ", ".join(f"{s:.2f}" for s in seconds[name])
        print(f"{name}: median {median:.2f} s = {args.events / median:,.0f} events/s  (runs: {runs})")
    print(f"avro/json time ratio: {medians['avro'] / medians['json']:.2f}  (below 1: Avro parses faster)")
    print(f"protobuf/json time ratio: {medians['protobuf'] / medians['json']:.2f}  (below 1: Protobuf parses faster)")
    print(f"load average before {load_before[0]:.1f}, after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
