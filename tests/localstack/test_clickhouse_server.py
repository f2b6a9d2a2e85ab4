"""The local stack's ClickHouse server: its background merges yield the cores to inserts and queries."""

from __future__ import annotations

import os

import clickhouse_connect
import pytest

from localstack.clickhouse_server import MERGE_NICE_INCREMENT
from tests.thread_priorities import can_renice_threads, thread_nice_values_while


@pytest.mark.skipif(not can_renice_threads(), reason="ClickHouse sets its threads' nice value only with CAP_SYS_NICE")
def test_merges_run_below_the_servers_own_priority(clickhouse_server):
    server_nice = os.getpriority(os.PRIO_PROCESS, clickhouse_server.pid)
    client = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    client.command(
        "CREATE TABLE IF NOT EXISTS default.merge_priority (k UInt64, s String) ENGINE = MergeTree ORDER BY k"
    )
    for _ in range(3):
        client.command("INSERT INTO default.merge_priority SELECT number, toString(number) FROM numbers(1000000)")
    with thread_nice_values_while(clickhouse_server.pid, interval=0.005) as seen:
        client.command("OPTIMIZE TABLE default.merge_priority FINAL")  # merges the parts, and waits for it
    # The pool's threads take the lower priority when they run a merge.
    assert ("MergeMutate", min(19, server_nice + MERGE_NICE_INCREMENT)) in seen
    assert ("HTTPHandler", server_nice) in seen  # the request itself kept the server's priority
    parts = client.query("SELECT count() FROM system.parts WHERE table = 'merge_priority' AND active").result_rows
    assert parts == [(1,)]
