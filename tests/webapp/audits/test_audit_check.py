"""The audit counts exactly the duplicate keys inserted into a pipeline's table (real ClickHouse)."""

from __future__ import annotations

import clickhouse_connect
import pytest

from localstack.processes import free_port
from tests.thread_priorities import can_renice_threads, thread_nice_values, thread_nice_values_while
from tests.webapp.audits.conftest import insert_orders
from webapp.audits import queries, selectors, services
from webapp.audits.models import AuditedTable, AuditResult
from webapp.connections.clickhouse_client import ClickHouseClientError
from webapp.connections.services import clickhouse_connection_create

pytestmark = pytest.mark.django_db


def test_a_pipelines_audited_table_comes_from_its_spec(audited_pipeline, pipeline_table, ch_conn):
    audited = services.audited_table_sync_pipeline(pipeline=audited_pipeline)

    assert audited.owner == audited_pipeline.owner
    assert audited.connection == ch_conn
    assert (audited.database, audited.table) == (pipeline_table.database, "orders")
    assert audited.key_columns == ["order_id"]
    assert audited.time_column == "_cf_ingested_at"
    assert audited.windows == [3600, 6 * 3600]
    # Syncing again keeps the one row, untouched.
    again = services.audited_table_sync_pipeline(pipeline=audited_pipeline)
    assert (again.pk, again.updated_at) == (audited.pk, audited.updated_at)
    # A new deployed spec (another dedup window) updates it.
    spec = audited_pipeline.spec
    spec = spec.model_copy(update={"dedup": spec.dedup.model_copy(update={"window": "2h"})})
    version = audited_pipeline.versions.create(number=2, spec=spec)
    audited_pipeline.current_version = version
    assert services.audited_table_sync_pipeline(pipeline=audited_pipeline).windows == [3600, 7200]


def test_the_audit_counts_exactly_the_duplicate_keys_of_the_window(audited_pipeline, pipeline_table, ch):
    insert_orders(ch, pipeline_table, [1, 2, 3, 4, 4, 5, 5, 5])  # now: keys 4 (x2) and 5 (x3)
    insert_orders(ch, pipeline_table, [6, 6, 7], hours_ago=2)  # older than the hour, inside the 6h window
    insert_orders(ch, pipeline_table, [1], hours_ago=3)  # key 1 again, 3 h ago
    insert_orders(ch, pipeline_table, [8, 8], hours_ago=30)  # older than both windows
    audited = services.audited_table_sync_pipeline(pipeline=audited_pipeline)

    hour, dedup_window = services.audit_check(audited_table=audited)

    assert (hour.window_seconds, hour.duplicate_keys, hour.duplicate_rows, hour.error) == (3600, 2, 5, "")
    assert (dedup_window.window_seconds, dedup_window.duplicate_keys, dedup_window.duplicate_rows) == (21600, 4, 9)
    assert selectors.latest_result_for_pipeline(pipeline_id=audited_pipeline.pk) == hour
    assert selectors.latest_result(audited_table_id=audited.pk) == hour


def test_the_stored_query_runs_as_it_is_and_gives_the_same_answer(audited_pipeline, pipeline_table, ch):
    insert_orders(ch, pipeline_table, [1, 1, 2])
    hour, _ = services.audit_check(audited_table=services.audited_table_sync_pipeline(pipeline=audited_pipeline))

    assert "`_cf_ingested_at` >= now() - INTERVAL 3600 SECOND" in hour.query
    assert "GROUP BY `order_id`" in hour.query
    assert ch.query(hour.query).result_rows == [(1, 2)]


def test_no_duplicates_is_zero_not_an_error(audited_pipeline, pipeline_table, ch):
    insert_orders(ch, pipeline_table, [1, 2, 3])
    hour, _ = services.audit_check(audited_table=services.audited_table_sync_pipeline(pipeline=audited_pipeline))
    assert (hour.duplicate_keys, hour.duplicate_rows, hour.error) == (0, 0, "")


def test_a_table_without_the_ingestion_column_gets_an_error_that_says_how_to_add_it(
    audited_pipeline, pipeline_table, ch
):
    ch.command(f"ALTER TABLE `{pipeline_table.database}`.orders DROP INDEX _cf_ingested_at_minmax")
    ch.command(f"ALTER TABLE `{pipeline_table.database}`.orders DROP COLUMN _cf_ingested_at")
    audited = services.audited_table_sync_pipeline(pipeline=audited_pipeline)

    results = services.audit_check(audited_table=audited)

    assert [r.duplicate_keys for r in results] == [None, None]
    assert "ALTER TABLE" in results[0].error and "ADD COLUMN `_cf_ingested_at`" in results[0].error


def test_the_query_cannot_write(audited_pipeline, pipeline_table, ch_conn):
    from webapp.connections.clickhouse_client import session

    with session(ch_conn.client_settings()) as s, pytest.raises(ClickHouseClientError):
        s.rows(
            f"INSERT INTO `{pipeline_table.database}`.orders (seq) SELECT 1",
            {},
            query_settings={"readonly": 2},
        )


def test_an_unreachable_server_is_transient_and_is_raised_for_a_retry(owner):
    closed = clickhouse_connection_create(
        owner=owner, data={"name": "closed", "host": "127.0.0.1", "port": free_port()}
    )
    # Created directly: the server (or the table) went away after the table was added.
    audited = AuditedTable.objects.create(
        owner=owner,
        workspace=closed.workspace,
        connection=closed,
        database="db",
        table="t",
        key_columns=["k"],
        time_column="at",
    )

    with pytest.raises(ClickHouseClientError) as raised:
        services.audit_check(audited_table=audited, record_transient=False)
    assert raised.value.transient
    assert not AuditResult.objects.exists()

    (result,) = services.audit_check(audited_table=audited, record_transient=True)
    assert result.duplicate_keys is None and "connection refused" in result.error


def test_a_missing_table_is_not_transient_and_is_stored(owner, ch_conn):
    # Created directly: the server (or the table) went away after the table was added.
    audited = AuditedTable.objects.create(
        owner=owner,
        workspace=ch_conn.workspace,
        connection=ch_conn,
        database="default",
        table="no_such_table",
        key_columns=["k"],
        time_column="t",
    )
    (result,) = services.audit_check(audited_table=audited, record_transient=False)
    assert result.duplicate_keys is None and "does not exist" in result.error


def test_the_engines_insert_leaves_the_ingestion_time_to_the_default(pipeline_table, clickhouse_server):
    import pyarrow as pa

    from spark_jobs.sink import PartitionWriter

    writer = PartitionWriter(
        conn={"host": clickhouse_server.host, "port": clickhouse_server.port},
        database=pipeline_table.database,
        table=pipeline_table.table,
        dlq_table="orders_dlq",
        columns=tuple((name, name) for name in ("order_id", "seq", "amount", "customer_name")),
        pipeline="p",
        token_prefix="t",
        batch_id=0,
        partition_rows={},  # only its insert is used here
    )
    rows = pa.table(
        {
            "order_id": pa.array(["00000000-0000-4000-8000-000000000001"]),
            "seq": pa.array([1], pa.int64()),
            "amount": pa.array([2.5]),
            "customer_name": pa.array([None], pa.string()),
        }
    )
    writer._insert(pipeline_table.table, rows, "token-1")

    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    ((age,),) = client.query(
        f"SELECT dateDiff('second', _cf_ingested_at, now64(3)) FROM `{pipeline_table.database}`.orders"
    ).result_rows
    assert 0 <= age < 60


@pytest.mark.skipif(not can_renice_threads(), reason="ClickHouse sets its threads' nice value only with CAP_SYS_NICE")
def test_the_checks_threads_yield_the_cores_to_everything_else_on_the_server(
    audited_pipeline, pipeline_table, ch, settings, clickhouse_server
):
    insert_orders(ch, pipeline_table, range(100_000))
    audited = services.audited_table_sync_pipeline(pipeline=audited_pipeline)
    settings.AUDIT_MAX_ROWS_PER_SECOND = 50_000  # about 2 s for the 100,000 rows: long enough to be seen
    before = thread_nice_values(clickhouse_server.pid)
    with thread_nice_values_while(clickhouse_server.pid, interval=0.02) as seen:
        hour, _ = services.audit_check(audited_table=audited)
    # The threads that handled the request and counted the keys ran at the audit's nice value (the server's
    # merge threads have their own, MERGE_NICE_INCREMENT below the server).
    audit_priority = [(name, nice) for name, nice in seen if nice == queries.AUDIT_THREAD_NICE]
    # The request's thread always. The query's pipeline threads were seen at the server's own priority on this
    # kind of machine (2026-12-01: QueryPullPipeEx at 0, LoadMarksThread at 10 in some runs only), so only the
    # request's thread is asserted; docs/audit.md says which threads yield.
    assert "HTTPHandler" in {name for name, _ in audit_priority}
    assert ("HTTPHandler", queries.AUDIT_THREAD_NICE) not in before
    assert (hour.duplicate_keys, hour.error) == (0, "")


def test_the_check_reads_at_most_the_set_rows_a_second_and_says_what_to_raise(
    audited_pipeline, pipeline_table, ch, settings
):
    insert_orders(ch, pipeline_table, [*range(200_000), 7])
    audited = services.audited_table_sync_pipeline(pipeline=audited_pipeline)
    settings.AUDIT_MAX_EXECUTION_SECONDS = 1

    # Unthrottled, 200,001 rows take ClickHouse a few milliseconds: the check finds key 7 twice.
    settings.AUDIT_MAX_ROWS_PER_SECOND = 0
    hour, _ = services.audit_check(audited_table=audited)
    assert (hour.duplicate_keys, hour.error) == (1, "")
    assert "max_execution_speed" not in hour.query

    # At 20,000 rows a second the same rows need 10 s: the server stops the query at its 1 s limit, and the
    # result is stored at once, not retried (the same rows would take as long again).
    settings.AUDIT_MAX_ROWS_PER_SECOND = 20_000
    hour, _ = services.audit_check(audited_table=audited, record_transient=False)
    assert "max_execution_speed = 20000" in hour.query
    assert hour.duplicate_keys is None
    assert "did not finish within 1 s: it reads at most 20,000 rows a second" in hour.error
    assert "stopped the query at its time limit" in hour.error
    assert "Raise CLEARFLOW_AUDIT_MAX_EXECUTION" in hour.error
