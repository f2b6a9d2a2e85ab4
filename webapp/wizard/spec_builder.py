"""Turn a wizard draft into a pipeline spec (version 1, `spark_jobs.spec`) and a stored spec back into
wizard data, so an existing pipeline is edited through the same steps.

The spec built here leaves the connections out: `webapp.pipelines.specs.merge_connections` fills
`source.kafka` and `sink.clickhouse` from the saved connections (secrets masked).
"""

from __future__ import annotations

from typing import Any

from spark_jobs.spec import SPEC_VERSION

# Which wizard step fixes a problem at a given spec path (longest prefix wins).
_STEP_OF_PATH = (
    ("source.kafka", "kafka"),
    ("source.topics", "topics"),
    ("source.fields", "sample"),
    ("source", "sample"),
    ("dedup", "dedup"),
    ("filter", "transform"),
    ("transforms", "transform"),
    ("sink.columns", "mapping"),
    ("sink.order_by", "clickhouse"),
    ("sink", "clickhouse"),
    ("name", "review"),
)


def step_for_path(path: str) -> str:
    for prefix, step in _STEP_OF_PATH:
        if path == prefix or path.startswith((prefix + ".", prefix + "[")):
            return step
    return "review"


def draft_spec(data: dict[str, Any], *, name: str, starting_offsets: str | None = None) -> dict[str, Any]:
    """The spec (without connection details) for the wizard data `data`."""
    sample = data.get("sample") or {}
    dedup = data.get("dedup") or {}
    transform = data.get("transform") or {}
    ch = data.get("clickhouse") or {}
    mapping = (data.get("mapping") or {}).get("columns") or []
    review = data.get("review") or {}
    new_table = ch.get("table_mode") != "existing"
    column_of = {m["field"]: m["column"] for m in mapping}
    spec: dict[str, Any] = {
        "version": SPEC_VERSION,
        "name": name,
        "source": {
            "topics": list((data.get("topics") or {}).get("topics", [])),
            "starting_offsets": starting_offsets or review.get("starting_offsets") or "earliest",
            "format": "json",
            "fields": [{"path": f["path"], "type": f["type"]} for f in sample.get("fields", [])],
        },
        "dedup": None,
        "filter": (transform.get("filter") or "").strip() or None,
        "transforms": [
            {"name": c["name"], "expression": c["expression"], "type": c["type"]} for c in transform.get("computed", [])
        ],
        "sink": {
            "clickhouse": {"database": ch.get("database") or "default"},
            "table": (ch.get("new_table") if new_table else ch.get("table")) or "",
            "create_table": new_table,
            "engine": ch.get("engine") or "MergeTree",
            "order_by": [column_of.get(path, path) for path in ch.get("order_by", [])] if new_table else [],
            "columns": [{"field": m["field"], "column": m["column"], "type": m["type"]} for m in mapping],
        },
    }
    if dedup.get("enabled"):
        event_time = dedup.get("time_basis") == "event_time"
        spec["dedup"] = {
            "keys": list(dedup.get("keys", [])),
            "window": dedup.get("window") or "1h",
            "time": "event" if event_time else "ingestion",
            "event_time_field": dedup.get("event_time_field") if event_time else None,
            "state_store": dedup.get("state_store") or "auto",
        }
    return spec


def wizard_data_from_spec(
    spec: dict[str, Any], *, kafka_connection_id: int, clickhouse_connection_id: int, name: str
) -> dict[str, Any]:
    """Wizard data that shows a stored spec in the wizard's steps (the inverse of `draft_spec`)."""
    source = spec.get("source") or {}
    sink = spec.get("sink") or {}
    dedup = spec.get("dedup")
    columns = sink.get("columns") or []
    field_of = {c["column"]: c["field"] for c in columns}
    create = bool(sink.get("create_table", True))
    return {
        "kafka": {"connection_id": kafka_connection_id},
        "topics": {"topics": list(source.get("topics", []))},
        "sample": {
            "count": 20,
            "position": "newest",
            "events": [],
            "fetched_at": None,
            "fields": [
                {"path": f["path"], "type": f["type"], "nullable": False, "manual": True, "examples": []}
                for f in source.get("fields", [])
            ],
        },
        "dedup": (
            {
                "enabled": True,
                "keys": list(dedup.get("keys", [])),
                "window": dedup.get("window", "1h"),
                "time_basis": "event_time" if dedup.get("time") == "event" else "ingestion",
                "event_time_field": dedup.get("event_time_field") or "",
                "state_store": dedup.get("state_store") or "auto",
            }
            if dedup
            else {"enabled": False}
        ),
        "transform": {
            "filter": spec.get("filter") or "",
            "computed": [
                {"name": t["name"], "expression": t["expression"], "type": t["type"]}
                for t in spec.get("transforms", [])
            ],
        },
        "clickhouse": {
            "connection_id": clickhouse_connection_id,
            "database": (sink.get("clickhouse") or {}).get("database", "default"),
            "table_mode": "new" if create else "existing",
            "table": "" if create else sink.get("table", ""),
            "new_table": sink.get("table", "") if create else "",
            "engine": sink.get("engine", "MergeTree"),
            "order_by": [field_of.get(c, c) for c in sink.get("order_by", [])],
            "columns": [],
        },
        "mapping": {"columns": [{"field": c["field"], "column": c["column"], "type": c["type"]} for c in columns]},
        "review": {"name": name, "starting_offsets": source.get("starting_offsets", "earliest")},
    }
