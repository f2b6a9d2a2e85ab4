"""Exactly-once on an existing table: read whether it drops replayed inserts, and make it do so.

The rule itself is the engine's (`clearflow_spec.exactly_once`, pure); this module only asks ClickHouse for the
table's engine and settings (`table_insert_dedup_get`, a selector) and runs the one ALTER statement the rule
offers (`table_insert_dedup_enable`, a service). The API's validation, the pipeline page and the wizard's
table step use both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clearflow_spec.exactly_once import (
    DEFAULT_INSERT_DEDUP_WINDOW,
    TABLE_ENGINE_SQL,
    InsertDedup,
    insert_dedup_of_new_table,
    insert_dedup_of_table,
)
from webapp.connections import clickhouse_client
from webapp.core.exceptions import ApplicationError

if TYPE_CHECKING:
    from clearflow_spec.spec import PipelineSpec
    from webapp.connections.models import ClickHouseConnection
    from webapp.pipelines.models import Pipeline

TIMEOUT = 10.0  # seconds: the pipeline page and the table step wait for this answer


def table_insert_dedup_get(
    *, connection: ClickHouseConnection, database: str, table: str, window: int = DEFAULT_INSERT_DEDUP_WINDOW
) -> InsertDedup | None:
    """What `database.table` does with a replayed insert; None when the table does not exist.
    Raises ClickHouseClientError when ClickHouse cannot be asked."""
    with clickhouse_client.session(connection.client_settings(), timeout=TIMEOUT) as ch:
        rows = ch.rows(TABLE_ENGINE_SQL, {"db": database, "t": table})
    if not rows:
        return None
    engine, engine_full, create_query = rows[0]
    return insert_dedup_of_table(
        database=database, table=table, engine=engine, engine_full=engine_full or create_query, window=window
    )


def spec_insert_dedup(*, parsed: PipelineSpec, connection: ClickHouseConnection) -> InsertDedup:
    """The guarantee a pipeline of this spec gets from its target table (a table still to be created gets
    the setting from the job)."""
    sink = parsed.sink
    database = sink.clickhouse.database
    result = table_insert_dedup_get(
        connection=connection, database=database, table=sink.table, window=sink.insert_dedup_window
    )
    return result or insert_dedup_of_new_table(database=database, table=sink.table)


def _pipeline_spec(pipeline: Pipeline) -> PipelineSpec:
    """The pipeline's current spec, parsed; ApplicationError when it has none that is valid."""
    from clearflow_spec.spec import SpecError
    from webapp.pipelines import stored_specs

    if pipeline.current_version_id is None or pipeline.clickhouse_connection is None:
        raise ApplicationError("The pipeline has no spec or no ClickHouse connection yet.")
    try:
        return stored_specs.with_connection_sections(
            pipeline.spec,
            kafka_connection=pipeline.kafka_connection,
            clickhouse_connection=pipeline.clickhouse_connection,
        )
    except SpecError as exc:
        raise ApplicationError(f"The pipeline's spec is not valid: {exc.errors[0]}") from None


def pipeline_insert_dedup(*, pipeline: Pipeline) -> tuple[InsertDedup | None, str]:
    """(the guarantee of the pipeline's current spec, "") or (None, why it cannot be told now)."""
    try:
        parsed = _pipeline_spec(pipeline)
        return spec_insert_dedup(parsed=parsed, connection=pipeline.clickhouse_connection), ""
    except ApplicationError as exc:
        return None, exc.message


def pipeline_table_dedup_enable(*, pipeline: Pipeline) -> InsertDedup:
    """`table_insert_dedup_enable` for the pipeline's target table."""
    sink = _pipeline_spec(pipeline).sink
    return table_insert_dedup_enable(
        connection=pipeline.clickhouse_connection,
        database=sink.clickhouse.database,
        table=sink.table,
        window=sink.insert_dedup_window,
    )


def table_insert_dedup_enable(
    *, connection: ClickHouseConnection, database: str, table: str, window: int = DEFAULT_INSERT_DEDUP_WINDOW
) -> InsertDedup:
    """Run the ALTER statement that makes the table drop replayed inserts; the table's state afterwards.

    Raises ApplicationError when there is nothing to run (the engine cannot deduplicate, or the table is
    gone), ClickHouseClientError when ClickHouse refuses (e.g. a read-only user: the message says so).
    """
    before = table_insert_dedup_get(connection=connection, database=database, table=table, window=window)
    if before is None:
        raise ApplicationError(f"The table {database}.{table} does not exist.")
    if before.exactly_once:
        return before
    if before.fix_sql is None:
        raise ApplicationError(before.reason)
    with clickhouse_client.session(connection.client_settings(), timeout=TIMEOUT) as ch:
        ch.command(before.fix_sql, {})
    after = table_insert_dedup_get(connection=connection, database=database, table=table, window=window)
    if after is None or not after.exactly_once:  # pragma: no cover - ClickHouse accepted but did not apply it
        raise ApplicationError(f"The setting did not take effect on {database}.{table}.")
    return after


__all__ = [
    "pipeline_insert_dedup",
    "pipeline_table_dedup_enable",
    "spec_insert_dedup",
    "table_insert_dedup_enable",
    "table_insert_dedup_get",
]
