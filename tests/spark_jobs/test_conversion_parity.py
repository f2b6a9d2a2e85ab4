"""Parity: `clearflow_spec.conversion` (pure Python, used by the wizard and the API) and the real Spark job must
agree on every value of a battery: whether the event reaches the table, and else the dead-letter reason.

Each case is one Kafka record (raw JSON text, as a producer writes it) through `pipeline.build_stream`,
the job's whole transformation, on a static DataFrame; the module gets the same record parsed by `json`.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from clearflow_spec import conversion
from clearflow_spec.spec import field_type_compatible, parse_spec

pytestmark = pytest.mark.spark

FIELD_TYPES = ("string", "int", "float", "bool", "datetime", "uuid", "json")
COLUMN_TYPES = (
    "String",
    "LowCardinality(String)",
    "FixedString(4)",
    "JSON",
    "UUID",
    "IPv4",
    "IPv6",
    "Int8",
    "UInt8",
    "Int32",
    "Nullable(Int32)",
    "UInt32",
    "Int64",
    "UInt64",
    "Int128",
    "Float32",
    "Float64",
    "Decimal(5, 2)",
    "Decimal64(3)",
    "Decimal(40, 2)",
    "Bool",
    "Date",
    "Date32",
    "DateTime",
    "DateTime64(3, 'UTC')",
)
# Raw JSON values: numbers as strings, floats into ints, overflow, bools, nulls, dates and timestamps in
# several formats, UUIDs, addresses, nested values. None stands for "the field is not in the event".
VALUES: tuple[str | None, ...] = (
    None,
    "null",
    *(
        json.dumps(s)
        for s in (
            "abc", "42", " 42 ", "\t42", "+7", "-0", "1.5", "1.", ".", "1e3", "0x10", "\u0661\u0662", "", " ",
            "300", "-1", "255", "256", "2147483648", "4294967295", "9223372036854775807", "9223372036854775808",
            "-9223372036854775809", "18446744073709551615",
            "true", "TRUE", " false ", "yes", "1", "0",
            "1d", "0x1p3", "inf", "-Infinity", "nan", "NaN", "-nan", "1_000", "1e400", "123.456", "999.995",
            "1.005", "-0.005", "12345678901234567890123456789012345678901",
            "2024-01-05", "2024-1-5", "2024-02-30", "2023-02-29", "2024-02-29", "2024", "2024-01", "20240105",
            "2024-01-05 10:00:00", "2024-01-05T10:00:00Z", "2024-01-05T10:00:00.123456789+02:00",
            "2024-01-05T10:00:00 UTC", "2024-01-05T10:00Z", "2024-01-05T10:00", "2024-01-05T25:00:00",
            "2024-01-05T10:00:00+19:00", "2024-01-05T10:00:00 Europe/Paris", "2024-01-05T10:00:00 Mars/Olympus",
            "2024-01-05T10:00:00PST", "2024-01-05T10:00:00GMT+1", "2024-01-05T10:00:00+1:30", "2024-01-05 garbage",
            "10:15:30", "T10:15:30", "05/01/2024", "Jan 5 2024", "+12024-01-05", "-0044-03-15", "1699999999",
            "1699999999123", "1699999999.5", "99999999999999999999",
            "123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
            "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-426614174000\n",
            "123e4567-e89b-12d3-a456-426614174000\r", "{123e4567-e89b-12d3-a456-426614174000}",
            "192.168.0.1", "256.1.1.1", "::1", "fe80::1%eth0",
            '{"a": 1}', ' {"a":1}', "[1, 2]", '{"a":1,"a":2}', '{"a": NaN}', "{bad",
            "h\u00e9llo", "\u65e5\u672c",
        )
    ),
    "0", "1", "-1", "42", "127", "128", "255", "256", "-129", "2147483647", "2147483648", "4294967296",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551616",
    "1.0", "1.5", "-1.5", "1.50", "1e3", "1E20", "1e-5", "0.001", "999.995", "1.005", "12345678.9",
    "123456789012345678901234567890", "1e400", "-0.0", "NaN", "Infinity", "-Infinity",
    "1699999999", "1699999999123", "99999999999999999999",
    "true", "false",
    '{"a": 1}', "{}", "[]", "[1, 2]", '{"a": {"b": [1.50, "x", null, true]}}', '"{\\"a\\": 1}"',
)  # fmt: skip
RAW_SCHEMA = (
    "_cf_value binary, _kafka_topic string, _kafka_partition int, _kafka_offset long, _kafka_timestamp timestamp, "
    "_kafka_key string, _kafka_headers map<string,string>"
)


def _spec(fields: list[dict[str, str]], columns: list[dict[str, str]], dedup: dict | None = None) -> Any:
    data: dict[str, Any] = {
        "version": 1,
        "name": "parity",
        "source": {"kafka": {"bootstrap_servers": "127.0.0.1:9"}, "topics": ["t"], "fields": fields},
        "sink": {"clickhouse": {"host": "127.0.0.1"}, "table": "t", "columns": columns},
    }
    if dedup:
        data["dedup"] = dedup
    return parse_spec(data)


def _run(spark: Any, spec: Any, records: list[str], tmp: Path) -> dict[int, str | None]:
    """The job's dead-letter reason (None: written) for each record, by its offset: the records are read
    as a stream (dedup needs one) through the job's whole transformation, once (availableNow)."""
    from spark_jobs.pipeline import build_stream

    now = datetime.now(UTC)
    rows = [(bytearray(text.encode()), "t", 0, i, now, None, {}) for i, text in enumerate(records)]
    spark.createDataFrame(rows, RAW_SCHEMA).write.parquet(str(tmp / "in"))
    stream = build_stream(spark.readStream.schema(RAW_SCHEMA).parquet(str(tmp / "in")), spec).select(
        "_cf_dlq_offset", "_cf_error"
    )
    name = f"parity_{uuid.uuid4().hex[:8]}"
    query = (
        stream.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
        collected = spark.sql(f"SELECT _cf_dlq_offset, _cf_error FROM {name}").collect()
    finally:
        query.stop()
        spark.catalog.dropTempView(name)
    assert len(collected) == len(records), "the job dropped records"
    # Written rows do not carry their offset (only dead letters do).
    dead = {r["_cf_dlq_offset"]: r["_cf_error"] for r in collected if r["_cf_error"] is not None}
    return {i: dead.get(i) for i in range(len(records))}


def _record(path: str, raw: str | None) -> str:
    if raw is None:
        return "{}"
    head, _, leaf = path.rpartition(".")
    text = f'{{"{leaf}": {raw}}}'
    return f'{{"{head}": {text}}}' if head else text


def test_every_value_converts_as_the_job_converts_it(spark: Any, tmp_path: Path) -> None:
    combos = [(ft, ct) for ft in FIELD_TYPES for ct in COLUMN_TYPES if field_type_compatible(ft, ct)]
    assert len(combos) > 60
    fields = [{"path": f"f{k}", "type": ft} for k, (ft, _) in enumerate(combos)]
    columns = [{"field": f"f{k}", "column": f"c{k}", "type": ct} for k, (_, ct) in enumerate(combos)]
    # Nested paths: the parent is an object, null, missing, or something else (the record is refused).
    fields.append({"path": "n.q", "type": "int"})
    columns.append({"field": "n.q", "column": "cn", "type": "Int32"})
    spec = _spec(fields, columns)

    cases = [(f"f{k}", ft, ct, f"c{k}", raw) for k, (ft, ct) in enumerate(combos) for raw in VALUES]
    cases += [("n.q", "int", "Int32", "cn", raw) for raw in ("5", '"x"', "null", None, "3000000000")]
    records = [_record(path, raw) for path, _, _, _, raw in cases]
    records += ['{"n": "x"}', '{"n": null}', '{"n": [1]}', '{"n": 5}', '{"n": {}}']
    cases += [("n.q", "int", "Int32", "cn", "<parent>")] * 5

    job = _run(spark, spec, records, tmp_path)
    disagreements = []
    for i, (path, ft, ct, column, _raw) in enumerate(cases):
        event = json.loads(records[i])
        outcome = conversion.convert(
            conversion.lookup(event, path), field_type=ft, column_type=ct, field=path, column=column
        )
        mine = None if outcome.ok else outcome.reason
        if mine != job[i]:
            disagreements.append(f"{ft} -> {ct}: {records[i]!r}: job {job[i]!r}, module {mine!r}")
    assert not disagreements, f"{len(disagreements)} of {len(cases)} disagree:\n" + "\n".join(disagreements[:200])


def test_dedup_keys_and_event_time_are_checked_as_the_job_checks_them(spark: Any, tmp_path: Path) -> None:
    spec = _spec(
        [{"path": "id", "type": "int"}, {"path": "ts", "type": "datetime"}],
        [{"field": "id", "column": "id", "type": "Int64"}],
        dedup={"keys": ["id"], "window": "1h", "time": "event", "event_time_field": "ts"},
    )
    stamps = [v for v in VALUES if v is not None] + [None]
    records = []
    for i, stamp in enumerate(stamps):
        event = {"id": i}
        if stamp is not None:
            event["ts"] = json.loads(stamp)
        records.append(json.dumps(event))
    for key in ("null", '"x"', "1.5", None, '" 1000000 "'):
        records.append('{"ts": "2024-01-05T10:00:00Z"' + (f', "id": {key}}}' if key else "}"))
    job = _run(spark, spec, records, tmp_path)
    disagreements = []
    for i, text in enumerate(records):
        event = json.loads(text)
        # The job's order: the fields' conversion (id, then ts), the key, then the event time.
        key = conversion.key_outcome(event, "id", "int")
        _typed, ts_parsed = conversion.field_value(conversion.lookup(event, "ts"), "datetime", field="ts")
        time = conversion.event_time_outcome(event, "ts")
        first = next(
            (o for o in (key if key.stage == "field" else conversion.OK, ts_parsed, key, time) if not o.ok), None
        )
        mine = first.reason if first else None
        if mine != job[i]:
            disagreements.append(f"{text!r}: job {job[i]!r}, module {mine!r}")
    assert not disagreements, f"{len(disagreements)} of {len(records)} disagree:\n" + "\n".join(disagreements[:200])
