"""The exactly-once rule for a target table, from what system.tables says (pure: no ClickHouse needed here;
tests/webapp/pipelines/test_exactly_once.py runs it against the real server)."""

from __future__ import annotations

import pytest

from clearflow_spec.exactly_once import insert_dedup_of_table, table_settings

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


def check(engine: str, engine_full: str, window: int = 1000):
    return insert_dedup_of_table(database="db", table="t", engine=engine, engine_full=engine_full, window=window)


def test_a_mergetree_table_without_the_setting_is_at_least_once_with_the_alter_to_run():
    result = check("MergeTree", "MergeTree ORDER BY id SETTINGS index_granularity = 8192")
    assert result.guarantee == "at-least-once"
    assert result.fix_sql == "ALTER TABLE `db`.`t` MODIFY SETTING non_replicated_deduplication_window = 1000"
    assert "non_replicated_deduplication_window" in result.reason


@pytest.mark.parametrize("engine", ["MergeTree", "ReplacingMergeTree", "AggregatingMergeTree"])
def test_the_mergetree_family_with_a_window_is_exactly_once(engine):
    full = f"{engine} ORDER BY id SETTINGS index_granularity = 8192, non_replicated_deduplication_window = 500"
    result = check(engine, full)
    assert result.exactly_once and result.fix_sql is None
    assert "last 500" in result.reason


def test_a_window_of_zero_is_no_window():
    result = check("MergeTree", "MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 0", window=2000)
    assert not result.exactly_once
    assert result.fix_sql.endswith("non_replicated_deduplication_window = 2000")


def test_replicated_tables_deduplicate_by_default_unless_switched_off():
    full = "ReplicatedMergeTree('/clickhouse/tables/{shard}/t', '{replica}') ORDER BY id"
    assert check("ReplicatedMergeTree", full).exactly_once
    assert check("SharedReplacingMergeTree", "SharedReplacingMergeTree ORDER BY id").exactly_once
    off = check("ReplicatedMergeTree", full + " SETTINGS replicated_deduplication_window = 0")
    assert not off.exactly_once
    assert off.fix_sql == "ALTER TABLE `db`.`t` MODIFY SETTING replicated_deduplication_window = 1000"


@pytest.mark.parametrize("engine", ["Memory", "Log", "Distributed", "Null"])
def test_other_engines_are_at_least_once_with_nothing_to_run(engine):
    result = check(engine, engine)
    assert not result.exactly_once and result.fix_sql is None
    assert f"uses the {engine} engine" in result.reason


def test_names_are_quoted_in_the_statement():
    result = insert_dedup_of_table(database="my db", table="a`b", engine="MergeTree", engine_full="MergeTree")
    assert result.fix_sql == "ALTER TABLE `my db`.`a\\`b` MODIFY SETTING non_replicated_deduplication_window = 1000"


def test_settings_are_read_from_engine_full_or_the_create_query():
    assert table_settings("MergeTree ORDER BY id SETTINGS a = 1, storage_policy = 'x, y', b = 2") == {
        "a": "1",
        "storage_policy": "x, y",
        "b": "2",
    }
    query = (
        "CREATE TABLE db.t (`id` UInt8) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 9"
    )
    assert table_settings(query) == {"non_replicated_deduplication_window": "9"}
    assert table_settings("Memory") == {}
