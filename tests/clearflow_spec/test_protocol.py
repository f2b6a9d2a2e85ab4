"""The run-time protocol: what the web app, the worker and the job share is declared once and used as declared."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from django.conf import settings

from clearflow_spec import protocol
from clearflow_spec.protocol import STARTED_LINE, STARTED_LINE_RE, TOTAL_FIELDS, BatchMetrics, Task

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


def test_the_worker_registers_exactly_the_declared_tasks():
    from worker.celery import app

    app.loader.import_default_modules()
    registered = {name for name in app.tasks if name.startswith("clearflow.")}
    assert registered == {str(task) for task in Task}


def test_the_beat_schedule_and_the_routes_use_declared_tasks():
    from worker.celery import app
    from worker.schedule import beat_schedule

    for entry in beat_schedule().values():
        assert entry["task"] in set(Task)
    for task in (Task.PIPELINE_RECONCILE, Task.PIPELINES_WATCH, Task.PIPELINE_JOB_DISCARD):
        assert app.amqp.router.route({}, str(task))["queue"].name == settings.PIPELINE_QUEUE
    assert app.amqp.router.route({}, str(Task.AUDIT_TABLE_CHECK))["queue"].name == settings.CELERY_TASK_DEFAULT_QUEUE


def test_the_started_line_the_job_logs_is_the_one_the_worker_reads():
    line = STARTED_LINE.format(
        name="pipeline-7",
        query="0b6f-11",
        application="local-1764000000000",
        checkpoint="/var/cp/pipeline-7",
        trigger="500 milliseconds",
    )
    assert STARTED_LINE_RE.findall(f"2026-11-25 10:00:00 INFO clearflow.run {line}") == ["local-1764000000000"]


def test_redis_keys_of_one_job_are_distinct_and_name_the_job():
    job = "pipeline-7"
    keys = [
        protocol.latest_key(job),
        protocol.recent_key(job),
        protocol.history_key(job),
        protocol.totals_key(job),
        protocol.heartbeat_key(job),
        protocol.job_log_key(job),
    ]
    assert len(set(keys)) == len(keys)
    assert all(
        key.startswith("clearflow:") and key.endswith((job, f"{job}:recent", f"{job}:history", f"{job}:totals"))
        for key in keys
    )
    constants = [protocol.WATCHER_TICK_KEY, protocol.HTTP_REQUESTS_KEY, protocol.CELERY_TASKS_KEY]
    assert len(set(constants)) == 3 and not set(constants) & set(keys)


def test_the_metrics_record_holds_every_total_and_reads_back_as_json():
    names = {f.name for f in fields(BatchMetrics)}
    assert set(TOTAL_FIELDS) <= names
    record = BatchMetrics(
        pipeline="pipeline-7", batch_id=3, timestamp="2026-11-25T10:00:00.000Z", input_rows=10,
        duplicates_dropped=2, rows_written=7, dead_letters=1, filtered_out=0, batch_duration_ms=420,
    )  # fmt: skip
    assert json.loads(record.to_json())["rows_written"] == 7
    assert set(json.loads(record.to_json())) == names


def test_run_directory_files_are_distinct():
    assert len({protocol.RunFiles.SPEC, protocol.RunFiles.LOG, protocol.RunFiles.EXIT_CODE}) == 3
    codes = [protocol.ExitCode.STOPPED, protocol.ExitCode.FAILED, protocol.ExitCode.INVALID_SPEC]
    assert len(set(codes)) == 3


def test_a_handoff_carries_paths_and_settings_and_reads_back_the_same():
    handoff = protocol.Handoff(
        spec="/runs/standby/x/spec.json",
        checkpoint="/checkpoints/pipeline-3",
        trigger_interval="1 second",
        driver_memory="1g",
        conf=("spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB=64", "spark.ui.enabled=false"),
    )
    line = handoff.to_json()
    assert "\n" not in line and json.loads(line)["conf"][1] == "spark.ui.enabled=false"
    assert protocol.Handoff.from_json(line) == handoff
