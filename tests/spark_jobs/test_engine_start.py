"""A job started with the product's settings (`python -m spark_jobs.run`, as the worker starts it): it writes its
rows, logs each start step's time (what bench/deploy_start.py reads), and serves no Spark UI unless asked.
Real Kafka, real ClickHouse, the job as its own process."""

from __future__ import annotations

import json
import subprocess

import pytest
from engine_helpers import event, job_command, make_spec, produce

from clearflow_spec.protocol import TIMING_LINE_RE


def run_job(spec: dict, tmp_path, name: str, *extra: str) -> subprocess.CompletedProcess:
    spec_file = tmp_path / f"{name}.json"
    spec_file.write_text(json.dumps(spec))
    command = job_command(spec_file, tmp_path / "checkpoint", "--available-now", *extra)
    at = command.index("spark.ui.enabled=false")
    del command[at - 1 : at + 1]  # the product's default, not the tests' explicit setting
    return subprocess.run(command, cwd="/", capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.spark
def test_a_job_writes_its_rows_logs_its_start_steps_and_serves_a_ui_only_when_asked(
    kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    topic = new_topic(1)
    produce(kafka_bootstrap, topic, [(0, event(f"k{i}")) for i in range(5)])
    spec = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic])

    job = run_job(spec, tmp_path, "default")
    assert job.returncode == 0, job.stderr[-3000:]
    assert ch.command(f"SELECT count() FROM default.{spec['sink']['table']}") == 5
    steps = {m.group(1): float(m.group(2)) for m in TIMING_LINE_RE.finditer(job.stderr)}
    assert list(steps) == ["runner", "jvm", "session", "query"]
    assert steps["runner"] <= steps["session"] <= steps["query"]
    assert "Spark UI at" not in job.stderr

    produce(kafka_bootstrap, topic, [(0, event(f"k{i}")) for i in range(5, 8)])
    job = run_job(spec, tmp_path, "with-ui", "--conf", "spark.ui.enabled=true")  # from the same checkpoint
    assert job.returncode == 0, job.stderr[-3000:]
    assert f"pipeline {spec['name']}: Spark UI at http://" in job.stderr
    assert ch.command(f"SELECT count() FROM default.{spec['sink']['table']}") == 8
