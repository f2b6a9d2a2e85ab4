"""The ClickHouse client module against the real server (chDB's HTTP interface)."""

from __future__ import annotations

import pytest

from clearflow_spec.clickhouse_types import quote_ident
from clearflow_spec.connections import ClickHouseConnectionSpec
from localstack.processes import free_port
from webapp.connections import clickhouse_client
from webapp.connections.clickhouse_client import ClickHouseClientError, ClickHouseNotFoundError


@pytest.fixture
def settings_(clickhouse_server) -> ClickHouseConnectionSpec:
    return ClickHouseConnectionSpec(host=clickhouse_server.host, port=clickhouse_server.port)


def test_check_connection(settings_):
    info = clickhouse_client.check_connection(settings_)
    assert info.version.startswith("26.")
    assert info.database_count >= 2


def test_databases_tables_columns(settings_, clickhouse_target):
    databases = clickhouse_client.list_databases(settings_)
    assert clickhouse_target.database in databases
    assert "system" not in databases
    tables = clickhouse_client.list_tables(settings_, database=clickhouse_target.database)
    assert [(t.name, t.engine) for t in tables] == [("orders", "ReplacingMergeTree"), ("other", "MergeTree")]
    columns = clickhouse_client.list_columns(settings_, database=clickhouse_target.database, table="orders")
    assert [(c.name, c.type, c.nullable, c.required) for c in columns] == [
        ("order_id", "UUID", False, True),
        ("seq", "Int64", False, True),
        ("amount", "Float64", False, True),
        ("customer_name", "Nullable(String)", True, False),
        ("inserted_at", "DateTime", False, False),
    ]
    assert columns[0].in_sorting_key


def test_unknown_names_are_not_found_and_not_injected(settings_, clickhouse_target):
    with pytest.raises(ClickHouseNotFoundError):
        clickhouse_client.list_tables(settings_, database="nope' OR 1=1 --")
    with pytest.raises(ClickHouseNotFoundError):
        clickhouse_client.list_columns(settings_, database=clickhouse_target.database, table="x`; DROP TABLE orders")
    assert "orders" in [t.name for t in clickhouse_client.list_tables(settings_, database=clickhouse_target.database)]


def test_wrong_password_and_unreachable_server(settings_):
    wrong = ClickHouseConnectionSpec(host=settings_.host, port=settings_.port, password="wrong")
    with pytest.raises(ClickHouseClientError, match="rejected the user name or password"):
        clickhouse_client.check_connection(wrong)
    with pytest.raises(ClickHouseClientError, match="connection refused"):
        clickhouse_client.check_connection(ClickHouseConnectionSpec(host="127.0.0.1", port=free_port()), timeout=2)


@pytest.mark.fast
def test_quote_ident():
    assert quote_ident("orders") == "`orders`"
    assert quote_ident("a`b\\c") == "`a\\`b\\\\c`"
