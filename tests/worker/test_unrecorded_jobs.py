"""A worker killed between starting a pipeline's job and committing its run leaves a job that no run records:
before the pipeline's next job starts, the worker stops it, so that one job runs, not two. Plain processes under
the real supervisor (worker.jobwrap), no Spark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil

from tests.spark_jobs.engine_helpers import wait_for
from worker import jobs, recovery

SLEEPER = "import time; time.sleep(600)"


def start_job(run_dir: Path, redis_url: str) -> int:
    run_dir.mkdir(parents=True)
    launcher = subprocess.run(
        [sys.executable, "-m", "worker.jobwrap", "--run-dir", str(run_dir), "--lease-seconds", "30", "--",
         sys.executable, "-c", SLEEPER],
        capture_output=True, text=True, timeout=30, cwd=Path(jobs.__file__).parents[1],
        env={**os.environ, "CLEARFLOW_REDIS_URL": redis_url},
    )  # fmt: skip
    assert launcher.returncode == 0, launcher.stderr
    return int(launcher.stdout)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_job_that_no_run_records_is_stopped_before_its_pipeline_starts_again(tmp_path, redis_url):
    run_root = tmp_path / "runs"
    orphan = start_job(run_root / "pipeline-41" / "20261202T020000-1", redis_url)
    another = start_job(run_root / "pipeline-42" / "20261202T020000-1", redis_url)
    try:
        assert recovery.stop_unrecorded_jobs("pipeline-41", run_root=run_root) == 1
        assert wait_for(lambda: gone(orphan), timeout=15)
        assert not gone(another)  # another pipeline's job is left alone
        assert recovery.stop_unrecorded_jobs("pipeline-41", run_root=run_root) == 0
    finally:
        for pid in (orphan, another):
            jobs.kill_session(pid)
