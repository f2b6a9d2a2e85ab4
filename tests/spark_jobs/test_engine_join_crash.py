"""The join in the runner as a separate process: SIGKILL during a load, restart, and every joined row is in
ClickHouse exactly once (none lost, none doubled)."""

from __future__ import annotations

import json
import threading

import pytest
from engine_helpers import JOB_TIMEOUT, produce, wait_for
from join_helpers import join_spec, order, payment
from test_engine_crash import kill_group, start_job

pytestmark = pytest.mark.spark


def test_sigkill_during_load_then_restart_writes_each_joined_row_once(
    kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    orders, payments = new_topic(2), new_topic(2)
    data = join_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, orders=orders, payments=payments)
    data["source"]["max_records_per_batch"] = 10_000
    data["join"]["source"]["max_records_per_batch"] = 10_000
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(data))
    table = data["sink"]["table"]
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "job.log"

    count = 20_000
    ids = [f"o{i:06d}" for i in range(count)]
    # Every order paid once; 10% of orders and payments sent twice (deduplicated before the join).
    order_records = [(i % 2, order(k, i)) for i, k in enumerate(ids)]
    order_records += [((i + 1) % 2, order(ids[i * 7 % count], -1)) for i in range(count // 10)]
    payment_records = [(i % 2, payment(f"p{k}", k, i)) for i, k in enumerate(ids)]
    payment_records += [
        ((i + 1) % 2, payment(f"p{ids[i * 3 % count]}", ids[i * 3 % count], -1)) for i in range(count // 10)
    ]

    def load() -> None:
        for i in range(0, len(order_records), 5_000):
            produce(kafka_bootstrap, orders, order_records[i : i + 5_000])
            produce(kafka_bootstrap, payments, payment_records[i : i + 5_000])

    job = start_job(spec_file, checkpoint, log)
    try:
        loader = threading.Thread(target=load)
        loader.start()

        def some_rows_written() -> bool:
            assert job.poll() is None, log.read_text()[-3000:]
            try:
                return ch.command(f"SELECT count() FROM {table}") > 0
            except Exception:
                return False

        wait_for(some_rows_written, timeout=JOB_TIMEOUT)
        kill_group(job)  # mid-load: the producer is still going or batches are in flight
        loader.join(timeout=300)
        written_before_restart = ch.command(f"SELECT count() FROM {table}")
        assert 0 < written_before_restart < count

        job = start_job(spec_file, checkpoint, log, "--available-now")
        assert job.wait(timeout=600) == 0, log.read_text()[-3000:]
    finally:
        if job.poll() is None:
            kill_group(job)

    total, distinct = ch.query(f"SELECT count(), uniqExact(order_id) FROM {table}").result_rows[0]
    assert (total, distinct) == (count, count)
    # Each order with its own payment: the first copy of each (amount and paid are the sequence number).
    mismatched = ch.command(f"SELECT count() FROM {table} WHERE payment_id != concat('p', order_id) OR amount != paid")
    assert mismatched == 0
    assert ch.command(f"SELECT count() FROM {table}_dlq") == 0
