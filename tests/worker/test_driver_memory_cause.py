"""A job started with a heap below Spark's floor (300m: Spark wants 450 MB) fails at once, and its cause is told in
words: what happened and what to change, as the run's record, the API, the pipeline page and the alert show it
(`worker.reconciler` classifies the job's log and exit code the same way). A real job process and Spark; its log
is kept as tests/data/job_failures/driver_memory.log for the fast tier."""

from __future__ import annotations

import pytest

from clearflow_spec import failures
from tests.worker.helpers import wait_for
from tests.worker.test_jobs import job_spec
from worker import jobs

pytestmark = [pytest.mark.spark]


@pytest.mark.timeout(600)
def test_a_heap_below_sparks_floor_is_told_as_such_with_the_setting_to_change(tmp_path):
    launch = jobs.JobLaunch(
        name="pipeline-1",
        run_dir=tmp_path / "runs" / "pipeline-1" / "1",
        checkpoint=str(tmp_path / "checkpoint"),
        master="local[2]",
        spec=job_spec(kafka={"bootstrap_servers": "127.0.0.1:9"}, clickhouse={"host": "127.0.0.1", "port": 9}),
        driver_memory="300m",
        spark_conf=("spark.ui.enabled=false",),
    )
    handle = jobs.start_job(launch)
    try:

        def ended() -> jobs.JobState | None:
            state = jobs.job_state(pid=handle.pid, process_started=handle.process_started, run_dir=handle.run_dir)
            return None if state.alive else state

        state = wait_for(ended, timeout=540, interval=0.5)
    finally:
        jobs.force_kill(pid=handle.pid, process_started=handle.process_started)
    log = jobs.log_tail(handle.log_path, lines=1000)
    assert state.exit_code == 1, log[-2000:]
    assert "INVALID_DRIVER_MEMORY" in log  # Spark's own words, in the job's log

    cause = failures.classify(log, state.exit_code, memory="300m")
    assert cause.code == failures.DRIVER_MEMORY_TOO_SMALL
    assert cause.words.startswith("Spark refused to start the job: its JVM had ")
    assert "MB of heap (300m asked for) and Spark needs at least 450 MB." in cause.what
    assert cause.change == (
        "Give the job a larger heap: set CLEARFLOW_DRIVER_MEMORY to at least 512m (or to auto, which sizes it from "
        "the pipeline's rate and state), restart the worker, and deploy the pipeline again."
    )
    assert "Traceback" not in cause.words and not cause.restart_helps
