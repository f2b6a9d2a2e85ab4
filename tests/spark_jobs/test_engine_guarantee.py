"""The job says at start what its target table guarantees: `python -m spark_jobs.run` on a user's own MergeTree
table without insert deduplication logs at-least-once with the ALTER statement; after the ALTER, exactly-once.
Real Kafka, real ClickHouse, the job as its own process."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from engine_helpers import event, job_command, make_spec, produce


def run_job(spec: dict, tmp_path, checkpoint: str) -> subprocess.CompletedProcess:
    spec_file = tmp_path / f"{checkpoint}.json"
    spec_file.write_text(json.dumps(spec))
    return subprocess.run(
        job_command(spec_file, tmp_path / checkpoint, "--available-now"),
        cwd="/",
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.spark
def test_the_job_logs_at_least_once_until_the_table_drops_replays(
    kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    table = f"own_{uuid.uuid4().hex[:8]}"
    ch.command(
        f"CREATE TABLE default.{table} (event_id String, user_id Nullable(UUID), n Nullable(Int64), "
        "topic LowCardinality(String)) ENGINE = MergeTree ORDER BY event_id"
    )
    produce(kafka_bootstrap, topic, [(0, event(f"k{i}")) for i in range(5)])
    spec = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic], table=table)
    spec["sink"]["create_table"] = False
    alter = f"ALTER TABLE `default`.`{table}` MODIFY SETTING non_replicated_deduplication_window = 1000"

    job = run_job(spec, tmp_path, "first")
    assert job.returncode == 0, job.stderr[-3000:]
    assert f"pipeline {spec['name']}: at-least-once: default.{table} (MergeTree) has no " in job.stderr
    assert f"to drop replays run: {alter}" in job.stderr
    assert ch.command(f"SELECT count() FROM default.{table}") == 5

    ch.command(alter)
    job = run_job(spec, tmp_path, "second")
    assert job.returncode == 0, job.stderr[-3000:]
    assert f"pipeline {spec['name']}: exactly-once: default.{table} (MergeTree) drops replayed inserts" in job.stderr
    assert "at-least-once" not in job.stderr
