"""The wizard's draft holds a partial pipeline spec in the spec's own words (`spark_jobs.spec`), under
`data["spec"]`: each step writes the spec fields it shows (`source.topics`, `dedup.window`, `sink.columns`, ...)
and leaves every other field as it was. Editing a pipeline starts from its stored spec, so what the wizard
does not show (`source.max_records_per_batch`, `sink.dlq_table`, `sink.insert_dedup_window`, ...) is kept.

Beside the spec, the draft keeps only what a spec has no place for: the connection ids (the pipelines
service merges the connections in), the sampled events and per-field notes (sometimes missing, added by
hand, examples), an existing table's columns, the ORDER BY as field paths, the pipeline's name.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from spark_jobs.spec import SPEC_VERSION

SPEC_KEY = "spec"

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


def partial_spec(data: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the draft's partial spec (`{}` before the first step is saved)."""
    spec = data.get(SPEC_KEY)
    return copy.deepcopy(spec) if isinstance(spec, dict) else {}


def spec_value(data: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """The draft's spec value at a dotted path (`"sink.table"`), or `default` when it is not set."""
    node: Any = data.get(SPEC_KEY)
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def with_changes(spec: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `spec` with each dotted path of `changes` set (a missing or null parent becomes `{}`).
    A value of `...` (Ellipsis) removes the key: e.g. `{"sink.columns": ...}` asks the mapping step to map again."""
    result = copy.deepcopy(dict(spec))
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = result
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        if value is Ellipsis:
            node.pop(last, None)
        else:
            node[last] = copy.deepcopy(value)
    return result


def complete_spec(data: Mapping[str, Any], *, name: str, starting_offsets: str | None = None) -> dict[str, Any]:
    """The spec to check and save (without connection details, which the pipelines service merges in)."""
    spec = partial_spec(data)
    spec["version"] = SPEC_VERSION
    spec["name"] = name
    if starting_offsets:
        spec = with_changes(spec, {"source.starting_offsets": starting_offsets})
    return spec


def edit_draft_data(
    spec: Mapping[str, Any],
    *,
    kafka_connection_id: int,
    clickhouse_connection_id: int,
    name: str,
    schema_registry_connection_id: int | None = None,
) -> dict[str, Any]:
    """The first draft data for editing a pipeline: its stored spec without the connection details."""
    partial = copy.deepcopy(dict(spec))
    partial.pop("version", None)
    partial.pop("name", None)
    source, sink = partial.get("source") or {}, partial.get("sink") or {}
    source.pop("kafka", None)
    source.pop("schema_registry", None)  # from the pipeline's registry connection, as `kafka` is
    if sink:
        sink["clickhouse"] = {"database": (sink.get("clickhouse") or {}).get("database") or "default"}
    field_of = {c.get("column"): c.get("field") for c in sink.get("columns") or []}
    return {
        SPEC_KEY: partial,
        "kafka": {"connection_id": kafka_connection_id},
        "schema-registry": {"connection_id": schema_registry_connection_id},
        "clickhouse": {
            "connection_id": clickhouse_connection_id,
            "order_by": [field_of.get(column, column) for column in sink.get("order_by") or []],
        },
        "review": {"name": name},
    }
