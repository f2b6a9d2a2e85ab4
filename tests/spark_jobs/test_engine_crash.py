"""The runner as a separate process: SIGKILL during a load, restart, exactly the unique set; SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from engine_helpers import JOB_TIMEOUT, event, job_command, make_spec, produce, wait_for

pytestmark = pytest.mark.spark


def start_job(spec_file: Path, checkpoint: Path, log: Path, *extra: str) -> subprocess.Popen:
    """`python -m spark_jobs.run` from an unrelated working directory, in its own process group."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            job_command(spec_file, checkpoint, "--trigger-interval", "200 milliseconds", *extra),
            cwd="/",
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill_group(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def test_sigkill_during_load_then_restart_writes_each_key_once(
    kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(2)
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic])
    data["source"]["max_records_per_batch"] = 20_000
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(data))
    table = data["sink"]["table"]
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "job.log"

    unique = 120_000
    keys = [f"key-{i:06d}" for i in range(unique)]
    # 10% duplicates, spread over both partitions and over time.
    records = [(i % 2, event(k, n=i)) for i, k in enumerate(keys)]
    records += [((i + 1) % 2, event(keys[i * 7 % unique], n=-i)) for i in range(unique // 10)]
    records.sort(key=lambda r: abs(r[1]["n"]))

    job = start_job(spec_file, checkpoint, log)
    try:
        loader = threading.Thread(
            target=lambda: [
                produce(kafka_bootstrap, topic, records[i : i + 10_000]) for i in range(0, len(records), 10_000)
            ]
        )
        loader.start()

        def some_rows_written() -> bool:
            assert job.poll() is None, log.read_text()[-3000:]
            try:
                return ch.command(f"SELECT count() FROM {table}") > 0
            except Exception:
                return False

        wait_for(some_rows_written, timeout=JOB_TIMEOUT)
        kill_group(job)  # mid-load: the producer is still going or batches are in flight
        loader.join(timeout=120)
        written_before_restart = ch.command(f"SELECT count() FROM {table}")
        assert 0 < written_before_restart < unique

        job = start_job(spec_file, checkpoint, log, "--available-now")
        assert job.wait(timeout=300) == 0, log.read_text()[-3000:]
    finally:
        if job.poll() is None:
            kill_group(job)

    total, distinct = ch.query(f"SELECT count(), uniqExact(event_id) FROM {table}").result_rows[0]
    assert (total, distinct) == (unique, unique)
    duplicated = ch.command(f"SELECT count() FROM (SELECT event_id FROM {table} GROUP BY event_id HAVING count() > 1)")
    assert duplicated == 0
    assert ch.command(f"SELECT count() FROM {table}_dlq") == 0


def test_sigterm_stops_after_the_current_batch(kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path, redis_url):
    topic = new_topic(1)
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic])
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(data))
    log = tmp_path / "job.log"
    produce(kafka_bootstrap, topic, [(0, event(f"k{i}")) for i in range(100)])
    job = start_job(spec_file, tmp_path / "checkpoint", log, "--redis-url", redis_url)
    try:
        wait_for(
            lambda: (
                job.poll() is None and ch.command(f"SELECT count() FROM {data['sink']['table']}") == 100
                if _table_exists(ch, data["sink"]["table"])
                else False
            ),
            timeout=JOB_TIMEOUT,
        )
        job.send_signal(signal.SIGTERM)
        assert job.wait(timeout=JOB_TIMEOUT) == 0, log.read_text()[-3000:]
    finally:
        if job.poll() is None:
            kill_group(job)
    text = log.read_text()
    assert "received SIGTERM" in text and f"pipeline {data['name']} stopped" in text
    metrics = [
        json.loads(line.split("clearflow.metrics ", 1)[1])
        for line in text.splitlines()
        if "clearflow.metrics {" in line
    ]
    assert sum(m["rows_written"] for m in metrics) == 100
    # Each batch says where its time went, in Spark's phases and the dedup state store's (names as Spark 4 has them).
    phases = [m["phases_ms"] for m in metrics]
    assert all("addBatch" in p and "state_commit" in p for p in phases), phases
    assert any("rocksdb_flush" in p and "rocksdb_write_stall" in p for p in phases), phases
    # The first batch takes longer than the 200 ms trigger: the log says the trigger once, and no warning that
    # the batch fell behind it (a busy pipeline's batches do so all the time, by design).
    assert "trigger 200 milliseconds)" in text
    assert "falling behind" not in text


def _table_exists(ch, table: str) -> bool:
    return bool(ch.command(f"EXISTS TABLE {table}"))


def test_permanent_clickhouse_error_stops_the_job_with_its_message(
    kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic])
    table = data["sink"]["table"]
    data["sink"]["create_table"] = False
    # An existing table whose `n` column cannot take the job's Int64 values.
    ch.command(
        f"CREATE TABLE {table} (event_id String, user_id Nullable(UUID), n Array(String), topic String) "
        "ENGINE = MergeTree ORDER BY event_id"
    )
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(data))
    log = tmp_path / "job.log"
    produce(kafka_bootstrap, topic, [(0, event("k1", n=1))])
    job = start_job(spec_file, tmp_path / "checkpoint", log)
    try:
        assert job.wait(timeout=180) == 1, log.read_text()[-3000:]
    finally:
        if job.poll() is None:
            kill_group(job)
    failure = [line for line in log.read_text().splitlines() if "pipeline " + data["name"] + " failed" in line]
    assert failure and "ClickHouseWriteError" in failure[0] and f"insert into default.{table}" in failure[0]
    assert "Code:" in failure[0]  # ClickHouse's own message
    assert ch.command(f"SELECT count() FROM {table}") == 0
