"""The audit's one ClickHouse query: how many keys occur more than once among the recent rows of a table.

Cheap on big tables: only rows whose time column is inside the window are read (the time bound prunes parts
and, when the time column leads the sorting key, granules), and the count runs with `max_execution_time`. It
reads at most `max_rows_per_second` rows a second (ClickHouse's `max_execution_speed`: the server sleeps
between blocks), and its threads run at a low OS priority (`AUDIT_THREAD_NICE`), so the count never takes the
cores that the pipelines' jobs and inserts need. The statement
is sent with `readonly = 2` (reads only; settings may still be set) through the ClickHouse client's choke
point. Identifiers are quoted; the window travels as a server-side parameter.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from clearflow_spec.clickhouse_types import quote_ident
from clearflow_spec.connections import ClickHouseConnectionSpec
from webapp.connections.clickhouse_client import session

WINDOW_PARAMETER = "{window_seconds:UInt32}"
# The Linux nice value of the audit's query threads on the server (ClickHouse's `os_thread_priority`, which a
# server without the CAP_SYS_NICE capability ignores). The pace bounds the reading but not the end of the count:
# its threads merge their hash tables at full speed (about 1.5 s of both cores for a 72M-key window), which held
# up the micro-batches of every pipeline on a full 2-core machine. At nice 10 the merge yields to the jobs, the
# inserts and the other queries. Sent as a request setting: in the statement's SETTINGS clause the server's
# HTTP handler applies it too late, to none of the query's threads (measured).
AUDIT_THREAD_NICE = 10


@dataclass(frozen=True)
class DuplicateCount:
    duplicate_keys: int
    duplicate_rows: int
    elapsed_ms: int


def duplicate_sql(
    *,
    database: str,
    table: str,
    key_columns: list[str],
    time_column: str | None,
    max_execution_time: int,
    max_rows_per_second: int = 0,
) -> str:
    """The audit query with the window as the parameter `{window_seconds:UInt32}`; `time_column` None leaves
    the time bound out (only the benchmark does that, to measure what the bound saves). `max_rows_per_second`
    0 reads at full speed."""
    keys = ", ".join(quote_ident(k) for k in key_columns)
    settings = f"max_execution_time = {int(max_execution_time)}"
    if max_rows_per_second > 0:
        # The speed is checked from the first block on (ClickHouse waits 10 s before its first check otherwise).
        settings += f", max_execution_speed = {int(max_rows_per_second)}, timeout_before_checking_execution_speed = 0"
    where = f"\n  WHERE {quote_ident(time_column)} >= now() - INTERVAL {WINDOW_PARAMETER} SECOND" if time_column else ""
    return (
        "SELECT count() AS duplicate_keys, sum(c) AS duplicate_rows\n"
        "FROM (\n"
        f"  SELECT count() AS c\n  FROM {quote_ident(database)}.{quote_ident(table)}{where}\n"
        f"  GROUP BY {keys}\n"
        "  HAVING c > 1\n"
        ")\n"
        f"SETTINGS {settings}"
    )


def runnable_sql(sql: str, *, window_seconds: int) -> str:
    """The query as a user can paste it into clickhouse-client: the window written in."""
    return sql.replace(WINDOW_PARAMETER, str(int(window_seconds)))


def count_duplicates(
    settings: ClickHouseConnectionSpec, *, sql: str, window_seconds: int, timeout: float
) -> DuplicateCount:
    """Run the audit query. Raises ClickHouseClientError (`transient` set for network/overload errors)."""
    started = time.monotonic()
    with session(settings, timeout=timeout) as ch:
        rows = ch.rows(
            sql,
            {"window_seconds": int(window_seconds)},
            query_settings={"readonly": 2, "os_thread_priority": AUDIT_THREAD_NICE},
        )
    elapsed_ms = int((time.monotonic() - started) * 1000)
    keys, duplicate_rows = rows[0] if rows else (0, 0)
    return DuplicateCount(duplicate_keys=int(keys or 0), duplicate_rows=int(duplicate_rows or 0), elapsed_ms=elapsed_ms)
