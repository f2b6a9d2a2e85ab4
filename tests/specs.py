"""One builder for the pipeline specs the tests and the benches write: a spec from keyword arguments, as the dict a
user or the API sends (`spec_dict`) or parsed (`pipeline_spec`). Only what is given goes in, so a spec reads as
what it sets; the field and column sets of the test events are named once here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clearflow_spec.spec import PipelineSpec, parse_spec

FIRST_FIELD = "<the first field>"  # `spec_dict`'s default dedup key
Field = tuple[str, str]  # (path, type)
Column = tuple[str, str, str]  # (field, column, ClickHouse type)

# The engine's test events (tests/spark_jobs/engine_helpers.event): {"event_id", "user": {"id"}, "email", "n"}.
EVENT_FIELDS: tuple[Field, ...] = (("event_id", "string"), ("user.id", "string"), ("email", "string"), ("n", "int"))
EVENT_COLUMNS: tuple[Column, ...] = (
    ("event_id", "event_id", "String"),
    ("user.id", "user_id", "Nullable(UUID)"),
    ("n", "n", "Nullable(Int64)"),
)
# Orders in Avro or Protobuf (tests/spark_jobs/test_engine_avro.py, test_engine_protobuf.py).
ORDER_FIELDS: tuple[Field, ...] = (
    ("event_id", "string"),
    ("qty", "int"),
    ("customer.name", "string"),
    ("paid_at", "datetime"),
)
ORDER_COLUMNS: tuple[Column, ...] = (
    ("event_id", "event_id", "String"),
    ("qty", "qty", "Int64"),
    ("customer.name", "customer", "String"),
    ("paid_at", "paid_at", "DateTime64(3, 'UTC')"),
)


def spec_dict(
    *,
    topics: Sequence[str],
    fields: Sequence[Field],
    columns: Sequence[Column],
    table: str,
    dedup: str | dict[str, Any] | None = FIRST_FIELD,
    window: str = "1h",
    order_by: Sequence[str] | None = None,
    kafka: str | None = None,
    clickhouse: Any = None,
    database: str | None = None,
    format: str | None = None,
    registry_url: str | None = None,
    starting_offsets: str | None = None,
    create_table: bool | None = None,
    engine: str | None = None,
    name: str | None = None,
    version: int | None = None,
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    **sections: Any,
) -> dict[str, Any]:
    """A spec dict. `dedup`: a field's path (over `window`), a whole dedup section, or None for none; by default the
    first field. `order_by` defaults to the dedup key. `kafka` (bootstrap servers) and `clickhouse` (an address with
    host and port, or a (host, port) pair) are the connection details a stored spec leaves to its connections;
    `database` goes with either. `source` and `sink` add keys to their sections, `sections` sets top-level ones
    (filter, transforms, join)."""
    if dedup == FIRST_FIELD:
        dedup = fields[0][0]
    dedup_section = {"keys": [dedup], "window": window} if isinstance(dedup, str) else dedup
    source_section: dict[str, Any] = {}
    if kafka is not None:
        source_section["kafka"] = {"bootstrap_servers": kafka}
    source_section["topics"] = list(topics)
    if format is not None:
        source_section["format"] = format
    if registry_url is not None:
        source_section["schema_registry"] = {"url": registry_url}
    if starting_offsets is not None:
        source_section["starting_offsets"] = starting_offsets
    source_section["fields"] = [{"path": path, "type": kind} for path, kind in fields]
    connection: dict[str, Any] = {}
    if clickhouse is not None:
        host, port = clickhouse if isinstance(clickhouse, tuple) else (clickhouse.host, clickhouse.port)
        connection.update(host=host, port=port)
    if database is not None:
        connection["database"] = database
    sink_section: dict[str, Any] = {"clickhouse": connection, "table": table}
    if create_table is not None:
        sink_section["create_table"] = create_table
    if engine is not None:
        sink_section["engine"] = engine
    if order_by is None:
        order_by = dedup_section["keys"] if dedup_section else []
    sink_section["order_by"] = list(order_by)
    sink_section["columns"] = [{"field": f, "column": c, "type": t} for f, c, t in columns]
    spec: dict[str, Any] = {}
    if version is not None:
        spec["version"] = version
    if name is not None:
        spec["name"] = name
    spec["source"] = {**source_section, **(source or {})}
    spec["dedup"] = dedup_section
    spec["sink"] = {**sink_section, **(sink or {})}
    spec.update(sections)
    return spec


def pipeline_spec(**kwargs: Any) -> PipelineSpec:
    """`spec_dict(**kwargs)`, parsed (with a version and a name when not given)."""
    data = spec_dict(**kwargs)
    return parse_spec({"version": 1, "name": "test-pipeline", **data})
