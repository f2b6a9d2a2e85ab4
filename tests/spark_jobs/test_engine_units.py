"""Pure parts of the engine: the metrics record, table DDL, error classification."""

from __future__ import annotations

import json

import pytest

from clearflow_spec.clickhouse_types import quote_ident
from spark_jobs.metrics import StateKeyCount, latest_key, metrics_from_progress, recent_key
from spark_jobs.sink import ClickHouseWriteError, TableSpec, create_table_sql, with_retries

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


def test_metrics_record_from_progress():
    progress = {
        "batchId": 7,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "numInputRows": 100,
        "batchDuration": 1234,
        "inputRowsPerSecond": 10.0,
        "processedRowsPerSecond": 81.0,
        "stateOperators": [
            {
                "operatorName": "dedupeWithinWatermark",
                "numRowsTotal": 500,
                "memoryUsedBytes": 2048,
                "numRowsDroppedByWatermark": 0,
                "customMetrics": {"numDroppedDuplicateRows": 30},
            }
        ],
        "sources": [
            {
                "endOffset": json.dumps({"t": {"0": 40, "1": 60}}),
                "latestOffset": json.dumps({"t": {"0": 45, "1": 60}}),
            }
        ],
        "observedMetrics": {"cf_filter": {"filtered_out": 4}},
    }
    record = metrics_from_progress("p1", progress, {"rows_written": 60, "dead_letters": 5})
    assert record.batch_id == 7
    assert record.duplicates_dropped == 30
    # Counted by the query (the filter's observed metric), not what is left over: 1 event of the 100 is
    # unaccounted for, and the record shows it (100 != 60 + 30 + 5 + 4).
    assert record.filtered_out == 4
    assert metrics_from_progress("p1", {**progress, "observedMetrics": {}}, {"rows_written": 60}).filtered_out == 0
    assert record.lag == {"t": {"0": 5, "1": 0}} and record.total_lag == 5
    assert record.state_rows == 500 and record.batch_duration_ms == 1234
    assert json.loads(record.to_json())["pipeline"] == "p1"


def test_a_slow_batch_says_where_its_time_went():
    progress = {
        "batchId": 9,
        "durationMs": {"addBatch": 5100, "queryPlanning": 40, "walCommit": 12, "triggerExecution": 5543},
        "stateOperators": [
            {
                "operatorName": "transformWithStateExec",
                "commitTimeMs": 4200,
                "allUpdatesTimeMs": 300,
                "allRemovalsTimeMs": 90,
                "customMetrics": {
                    "rocksdbWriterStallLatencyMs": 3900,
                    "rocksdbCommitFlushLatency": 150,
                    "rocksdbCommitFileSyncLatencyMs": 2700,
                },
            }
        ],
    }
    record = metrics_from_progress("p1", progress, {})
    assert record.phases_ms == {
        "addBatch": 5100,
        "queryPlanning": 40,
        "walCommit": 12,
        "state_commit": 4200,
        "state_updates": 300,
        "state_removals": 90,
        "rocksdb_flush": 150,
        "rocksdb_file_sync": 2700,
        "rocksdb_write_stall": 3900,
    }
    assert latest_key("p1") == "clearflow:metrics:p1"
    assert recent_key("p1") == "clearflow:metrics:p1:recent"


def _processor_progress(batch_id: int, *, added: int, expired: int) -> dict:
    return {
        "batchId": batch_id,
        "numInputRows": added,
        "stateOperators": [
            {
                "operatorName": "transformWithStateExec",
                "numRowsTotal": 0,  # Spark does not count them (trackTotalNumberOfRows=false)
                "numRowsUpdated": added,
                "customMetrics": {"numValuesRemovedDueToTTLExpiry": expired},
            }
        ],
    }


def test_state_keys_are_added_minus_expired_carried_in_the_checkpoint_and_a_replay_counts_once(tmp_path):
    count = StateKeyCount(str(tmp_path))
    assert count.add(_processor_progress(0, added=100, expired=0)) == 100
    assert count.add(_processor_progress(1, added=50, expired=30)) == 120
    # The next run from the same checkpoint goes on from there; batch 1 run again after a crash counts once.
    again = StateKeyCount(f"file://{tmp_path}")
    assert again.keys == 120
    assert again.add(_processor_progress(1, added=50, expired=30)) == 120
    assert again.add(_processor_progress(2, added=0, expired=20)) == 100
    record = metrics_from_progress("p1", _processor_progress(3, added=5, expired=0), {}, state_keys=again.keys)
    assert record.state_rows == 100
    # A new checkpoint starts from nothing; a remote one counts this run only.
    assert StateKeyCount(str(tmp_path / "new")).keys == 0
    assert StateKeyCount("s3a://bucket/ckpt").add(_processor_progress(0, added=7, expired=0)) == 7


def test_a_join_counts_both_sides_duplicates_and_every_removal_from_its_state(tmp_path):
    """A join's batch: two dedups and the join (transformWithState all three). The join removed 4 rows: 3 by
    TTL (rights) and 1 left event by its left join timeout, which only `numRowsRemoved` counts."""

    def operator(updated: int, removed: int, expired: int) -> dict:
        return {
            "operatorName": "transformWithStateExec",
            "numRowsUpdated": updated,
            "numRowsRemoved": removed,
            "customMetrics": {"numValuesRemovedDueToTTLExpiry": expired},
        }

    progress = {
        "batchId": 0,
        "numInputRows": 12,
        "stateOperators": [operator(5, 0, 0), operator(4, 0, 0), operator(9, 4, 3)],
        "observedMetrics": {
            "cf_dedup_in": {"rows": 7},
            "cf_dedup_out": {"rows": 5},
            "cf_dedup_in_right": {"rows": 5},
            "cf_dedup_out_right": {"rows": 4},
        },
    }
    keys = StateKeyCount(str(tmp_path)).add(progress)
    assert keys == 5 + 4 + 9 - 4
    record = metrics_from_progress("p1", progress, {"rows_written": 3}, state_keys=keys)
    assert (record.input_rows, record.duplicates_dropped, record.rows_written) == (12, 3, 3)
    assert record.state_rows == 14


def test_create_table_sql_quotes_names_and_sets_the_dedup_window():
    sql = create_table_sql(
        TableSpec(
            database="db",
            table="users",
            dlq_table="users_dlq",
            engine="ReplacingMergeTree",
            order_by=("event_id",),
            columns=(("event_id", "String"), ("user`id", "UUID")),
            insert_dedup_window=1000,
        )
    )
    assert "CREATE TABLE IF NOT EXISTS `db`.`users`" in sql
    assert "`user\\`id` UUID" in sql
    assert "ENGINE = ReplacingMergeTree" in sql and "ORDER BY (`event_id`)" in sql
    assert sql.endswith("SETTINGS non_replicated_deduplication_window = 1000")
    assert quote_ident("a`b") == "`a\\`b`"


def test_transient_errors_are_retried_and_permanent_ones_raise_with_the_message():
    from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError

    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("connection refused")
        return "ok"

    assert with_retries(flaky, what="insert", base_delay=0.01) == "ok" and len(calls) == 3

    def permanent():
        raise DatabaseError("Code: 60. DB::Exception: Table default.nope does not exist. (UNKNOWN_TABLE)")

    try:
        with_retries(permanent, what="insert into nope", base_delay=0.01)
    except ClickHouseWriteError as exc:
        assert "UNKNOWN_TABLE" in str(exc) and "insert into nope" in str(exc)
    else:
        raise AssertionError("a permanent error must raise")
