"""What an earlier stack left running is recognized by pid *and* start time: a pid given to another program since
is never taken for the stack's."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from localstack import leftovers, run_state
from worker import jobs

pytestmark = pytest.mark.fast


def _record_this_process(var_dir: Path, *, started: float) -> None:
    record = {**leftovers.process_record(os.getpid()), "name": "web", "started": started}
    run_state.write_stack(var_dir, {"pid": 1, "started_at": 0, "services": [record]})


def test_a_recorded_service_that_still_runs_with_its_start_time_is_a_leftover(tmp_path: Path) -> None:
    _record_this_process(tmp_path, started=psutil.Process().create_time())
    found = leftovers.find(tmp_path, tmp_path / "runs")
    assert [(service.name, service.process.pid) for service in found.services] == [("web", os.getpid())]
    assert found.count == 1


def test_a_reused_pid_is_not_a_leftover(tmp_path: Path) -> None:
    _record_this_process(tmp_path, started=psutil.Process().create_time() - 3600)  # the pid's earlier owner
    assert leftovers.find(tmp_path, tmp_path / "runs").count == 0


def test_a_record_without_a_start_time_is_not_a_leftover(tmp_path: Path) -> None:
    run_state.write_stack(tmp_path, {"services": [{"name": "web", "pid": os.getpid()}]})
    assert leftovers.find(tmp_path, tmp_path / "runs").count == 0


def test_a_record_names_the_program_and_its_start(tmp_path: Path) -> None:
    record = leftovers.process_record(os.getpid())
    assert record["pid"] == os.getpid()
    assert record["started"] == psutil.Process().create_time()
    assert record["command"] == psutil.Process().cmdline()


def test_what_was_found_is_worded_by_name(tmp_path: Path) -> None:
    web = leftovers.LeftService("web", psutil.Process())
    redis = leftovers.LeftService("redis", psutil.Process())
    assert leftovers.Leftovers([web, redis], jobs=[]).words() == "web and redis"
    job = jobs.JobHandle(pid=1, process_started=0.0, host="", run_dir=str(tmp_path / "pipeline-1" / "1"), log_path="")
    waiting = jobs.JobHandle(pid=2, process_started=0.0, host="", run_dir=str(tmp_path / "standby" / "2"), log_path="")
    assert leftovers.Leftovers([redis], jobs=[job, job]).words() == "redis and 2 pipeline jobs"
    assert leftovers.Leftovers([], jobs=[job, waiting]).words() == "1 pipeline job and a standby job"
