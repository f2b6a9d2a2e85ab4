"""Does a ClickHouse table drop a replayed insert? The answer decides whether a pipeline is exactly-once.

The job gives every insert a deterministic `insert_deduplication_token` (`spark_jobs.sink`); a micro-batch
replayed after a crash is dropped only if the table remembers recent insert tokens:
- MergeTree family (MergeTree, ReplacingMergeTree, ...): only with `non_replicated_deduplication_window` > 0
  (ClickHouse's default is 0). Tables ClearFlow creates have it; a user's own table may not.
- Replicated*MergeTree (and Shared*MergeTree): on by default, off when `replicated_deduplication_window` = 0.
- Any other engine (Memory, Log, Distributed, Null, Buffer...): never.

`insert_dedup_of_table(...)` is pure (no client, no Spark, no Django): the callers read `engine` and
`engine_full` (or `create_table_query`) from `system.tables` with `TABLE_ENGINE_SQL` and pass them in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from clearflow_spec.clickhouse_types import quote_ident

EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
Guarantee = Literal["exactly-once", "at-least-once"]
DEFAULT_INSERT_DEDUP_WINDOW = 1000  # the spec's default `sink.insert_dedup_window`

# Parameters `db` and `t`; one row (engine, engine_full, create_table_query), none when the table does not exist.
TABLE_ENGINE_SQL = (
    "SELECT engine, engine_full, create_table_query FROM system.tables"
    " WHERE database = {db:String} AND name = {t:String}"
)

_SETTINGS_RE = re.compile(r"\bSETTINGS\b(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_SETTING_RE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>'(?:[^'\\]|\\.)*'|[^,\s]+)")


@dataclass(frozen=True)
class InsertDedup:
    """What a table does with a replayed insert, in words a user can act on."""

    guarantee: Guarantee
    reason: str
    fix_sql: str | None = None  # the statement that makes the table drop replays, when one exists

    @property
    def exactly_once(self) -> bool:
        return self.guarantee == EXACTLY_ONCE


def table_settings(engine_full: str) -> dict[str, str]:
    """The `SETTINGS name = value, ...` of a table's `engine_full` (or `create_table_query`); quotes removed."""
    match = _SETTINGS_RE.search(engine_full or "")
    if not match:
        return {}
    settings = {}
    for item in _SETTING_RE.finditer(match.group("rest")):
        value = item.group("value")
        settings[item.group("name")] = value[1:-1] if value.startswith("'") else value
    return settings


def _int_setting(settings: dict[str, str], name: str) -> int | None:
    try:
        return int(settings[name])
    except (KeyError, ValueError):
        return None


def alter_sql(database: str, table: str, *, setting: str, value: int) -> str:
    return f"ALTER TABLE {quote_ident(database)}.{quote_ident(table)} MODIFY SETTING {setting} = {int(value)}"


def insert_dedup_of_table(
    *,
    database: str,
    table: str,
    engine: str,
    engine_full: str,
    window: int = DEFAULT_INSERT_DEDUP_WINDOW,
) -> InsertDedup:
    """Whether `database.table` drops replayed inserts, and the ALTER statement that would make it (`window`:
    how many recent inserts to remember, the spec's `sink.insert_dedup_window`)."""
    settings = table_settings(engine_full)
    name = f"{database}.{table}"
    if engine.startswith(("Replicated", "Shared")) and engine.endswith("MergeTree"):
        if _int_setting(settings, "replicated_deduplication_window") == 0:
            return InsertDedup(
                AT_LEAST_ONCE,
                f"{name} ({engine}) has replicated_deduplication_window = 0: a replayed insert would be written twice",
                alter_sql(database, table, setting="replicated_deduplication_window", value=window),
            )
        return InsertDedup(EXACTLY_ONCE, f"{name} ({engine}) drops replayed inserts (replicated deduplication)")
    if engine.endswith("MergeTree"):
        remembered = _int_setting(settings, "non_replicated_deduplication_window") or 0
        if remembered > 0:
            return InsertDedup(
                EXACTLY_ONCE,
                f"{name} ({engine}) drops replayed inserts among its last {remembered} "
                "(non_replicated_deduplication_window)",
            )
        return InsertDedup(
            AT_LEAST_ONCE,
            f"{name} ({engine}) has no non_replicated_deduplication_window: a micro-batch replayed after a crash "
            "would be written twice",
            alter_sql(database, table, setting="non_replicated_deduplication_window", value=window),
        )
    return InsertDedup(
        AT_LEAST_ONCE,
        f"{name} uses the {engine or 'unknown'} engine, which does not deduplicate inserts: a micro-batch replayed "
        "after a crash would be written twice (use a MergeTree table for exactly-once)",
    )


def insert_dedup_of_new_table(*, database: str, table: str) -> InsertDedup:
    """A table ClearFlow will create: with `non_replicated_deduplication_window` (spark_jobs.sink)."""
    return InsertDedup(EXACTLY_ONCE, f"{database}.{table} will be created with non_replicated_deduplication_window")


__all__ = [
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE",
    "TABLE_ENGINE_SQL",
    "Guarantee",
    "InsertDedup",
    "alter_sql",
    "insert_dedup_of_new_table",
    "insert_dedup_of_table",
    "table_settings",
]
