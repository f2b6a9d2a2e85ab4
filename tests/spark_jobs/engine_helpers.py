"""Helpers shared by the engine tests (importable because tests/spark_jobs is on sys.path)."""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tests.specs import EVENT_COLUMNS, EVENT_FIELDS, spec_dict


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[int, Any]],
    *,
    timestamp_ms: int | None = None,
) -> int:
    """Produce (partition, value) records; dict values are JSON-encoded, bytes sent as they are."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    count = 0
    for partition, value in records:
        payload = value if isinstance(value, bytes) else json.dumps(value).encode()
        kwargs = {"timestamp": timestamp_ms} if timestamp_ms is not None else {}
        producer.produce(topic, payload, partition=partition, **kwargs)
        count += 1
        if count % 50_000 == 0:
            producer.flush()
    assert producer.flush(30) == 0
    return count


def make_spec(
    *,
    kafka_bootstrap: str,
    clickhouse: Any,
    topics: list[str],
    table: str | None = None,
    dedup: dict | str | None = "default",
    **overrides: Any,
) -> dict:
    """A spec dict for the test events {"event_id": str, "user": {"id": uuid}, "email": str, "n": int}."""
    spec = spec_dict(
        version=1,
        name=overrides.pop("name", f"p-{uuid.uuid4().hex[:8]}"),
        kafka=kafka_bootstrap,
        clickhouse=clickhouse,
        topics=topics,
        starting_offsets="earliest",
        fields=EVENT_FIELDS,
        dedup={"keys": ["event_id"], "window": "1h", "time": "ingestion"} if dedup == "default" else dedup,
        table=table or f"t_{uuid.uuid4().hex[:10]}",
        create_table=True,
        engine="MergeTree",
        order_by=["event_id"],
        columns=[*EVENT_COLUMNS, ("_kafka_topic", "topic", "LowCardinality(String)")],
        filter=None,
        transforms=[],
    )
    spec.update(overrides)  # whole top-level sections, as given
    return spec


def event(event_id: str, n: int = 0, **extra: Any) -> dict:
    return {
        "event_id": event_id,
        "user": {"id": str(uuid.uuid5(uuid.NAMESPACE_OID, event_id))},
        "email": f"{event_id}@example.com",
        "n": n,
        **extra,
    }


# Bounds a hang, not a speed: a job process needs Spark's start and its first batch, 15-50 s on an idle 2-core
# machine and over 120 s seen while the machine was loaded.
JOB_TIMEOUT = 300


def wait_for(predicate: Callable[[], Any], *, timeout: float = 60, interval: float = 0.2) -> Any:
    """Poll until predicate() is truthy; return its value or fail with a timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def job_command(spec_file: Path, checkpoint: Path | str, *extra: str) -> list[str]:
    """`python -m spark_jobs.run` on two local cores, without the Spark UI; the secrets stay in the spec file.
    `checkpoint`: a local directory, or an object store's location (`s3a://bucket/prefix`)."""
    return [
        sys.executable,
        "-m",
        "spark_jobs.run",
        "--spec",
        str(spec_file),
        "--checkpoint",
        str(checkpoint),
        "--master",
        "local[2]",
        "--shuffle-partitions",
        "2",
        "--conf",
        "spark.ui.enabled=false",
        *extra,
    ]


def run_once(spark: Any, spec: Any, checkpoint: Path | str) -> None:
    """One availableNow run of `spec` from `checkpoint` (a second call continues from the same checkpoint)."""
    from spark_jobs.query import start_query, stop_query

    query = start_query(spark, spec, checkpoint=str(checkpoint), trigger={"availableNow": True})
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)
