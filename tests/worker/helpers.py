"""Pipelines through the API, events into Kafka, rows counted in ClickHouse."""

from __future__ import annotations

import uuid
from typing import Any

from tests.spark_jobs.engine_helpers import JOB_TIMEOUT, event, produce, wait_for
from tests.specs import EVENT_COLUMNS, EVENT_FIELDS, spec_dict

__all__ = [
    "JOB_TIMEOUT",
    "api_spec",
    "create_pipeline",
    "event",
    "events",
    "produce",
    "status_of",
    "wait_for",
    "wait_status",
]

URL = "/api/v1/pipelines/"


def api_spec(topic: str, table: str, **overrides: Any) -> dict:
    """A spec for the engine's test events; the connections fill in the addresses."""
    spec = spec_dict(
        topics=[topic],
        starting_offsets="earliest",
        fields=[field for field in EVENT_FIELDS if field[0] != "email"],
        database="default",
        table=table,
        create_table=True,
        engine="MergeTree",
        columns=EVENT_COLUMNS,
    )
    spec.update(overrides)
    return spec


def create_pipeline(api: Any, *, kafka_conn: Any, ch_conn: Any, spec: dict) -> int:
    response = api.post(
        URL,
        {
            "name": f"p-{uuid.uuid4().hex[:6]}",
            "kafka_connection": kafka_conn.pk,
            "clickhouse_connection": ch_conn.pk,
            "spec": spec,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def events(prefix: str, unique: int, duplicates: int, *, partitions: int = 2) -> list[tuple[int, dict]]:
    """`unique` events, then `duplicates` repeats of some of them, spread over the partitions."""
    keys = [f"{prefix}-{i:06d}" for i in range(unique)]
    records = [(i % partitions, event(k, n=i)) for i, k in enumerate(keys)]
    records += [((i + 1) % partitions, event(keys[i * 7 % unique], n=-i)) for i in range(duplicates)]
    return records


def status_of(api: Any, pk: int) -> dict:
    return api.get(f"{URL}{pk}/status/").json()


def wait_status(api: Any, pk: int, wanted: str, *, timeout: float = JOB_TIMEOUT, worker: Any = None) -> dict:
    def reached() -> dict | None:
        status = status_of(api, pk)
        if status["status"] == "failed" and wanted != "failed" and status.get("restart_at") is None:
            raise AssertionError(f"failed for good: {status['status_message']}\n{worker.log_tail() if worker else ''}")
        return status if status["status"] == wanted else None

    return wait_for(reached, timeout=timeout, interval=0.5)


def table_counts(ch: Any, table: str) -> tuple[int, int]:
    """(rows, distinct event ids); (0, 0) before the job created the table."""
    if not ch.command(f"EXISTS TABLE `{table}`"):
        return 0, 0
    total, distinct = ch.query(f"SELECT count(), uniqExact(event_id) FROM `{table}`").result_rows[0]
    return int(total), int(distinct)
