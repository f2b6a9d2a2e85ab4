"""What an earlier `make up` of this var directory left running because it did not stop (SIGKILL, the OOM killer,
a closed SSH session): found by the next `make up`, `make down` and `make status`, and stopped by the first two.

An earlier stack's services are the processes `var/run/stack.json` records (pid, start time, command) that still
run with that start time: a pid the system has given to another program since is never touched. Its pipeline
jobs are the job supervisors whose run directory lies under the stack's run root (`worker.jobs.find_jobs`: their
command line names it). Asked only while no `make up` holds the var directory's lock (`run_state.running_pid`).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from localstack import run_state
from worker import jobs, standby


@dataclass(frozen=True)
class LeftService:
    name: str
    process: psutil.Process


@dataclass(frozen=True)
class Leftovers:
    services: list[LeftService]
    jobs: list[jobs.JobHandle]

    @property
    def count(self) -> int:
        return len(self.services) + len(self.jobs)

    @property
    def pipeline_jobs(self) -> list[jobs.JobHandle]:
        """The jobs that run a pipeline (not a standby waiting for one)."""
        return [handle for handle in self.jobs if not standby.is_waiting(handle.run_dir)]

    def words(self) -> str:
        """What was found, e.g. "web, worker, kafka, 2 pipeline jobs and a standby job"."""
        parts = [service.name for service in self.services]
        running = len(self.pipeline_jobs)
        waiting = len(self.jobs) - running
        if running:
            parts.append(f"{running} pipeline job{'s' if running != 1 else ''}")
        if waiting:
            parts.append("a standby job" if waiting == 1 else f"{waiting} standby jobs")
        return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def process_record(pid: int) -> dict[str, Any]:
    """How to find a process again, and to tell it from a later one given the same pid: its pid, its start time
    (from /proc, as psutil reads it) and its command line."""
    process = psutil.Process(pid)
    return {"pid": pid, "started": process.create_time(), "command": process.cmdline()}


def find(var_dir: Path, run_root: Path) -> Leftovers:
    stack = run_state.read_stack(var_dir) or {}
    services = []
    for record in stack.get("services", []):
        # A record without a start time (written before they were recorded) cannot be told from a reused pid.
        started = record.get("started")
        process = jobs.live_process(record.get("pid"), started) if started is not None else None
        if process is not None:
            services.append(LeftService(str(record.get("name", "?")), process))
    return Leftovers(services, jobs.find_jobs(run_root))


def stop_services(services: Iterable[LeftService], *, timeout: float) -> list[str]:
    """Stop services of an earlier stack all at once: SIGTERM to each one's process group, SIGKILL to what is left
    of each one's session after `timeout` seconds (Celery's pool, gunicorn's workers). The names of those that
    had to be killed."""
    services = list(services)
    for service in services:
        _signal_group(service.process, signal.SIGTERM)
    _gone, alive = psutil.wait_procs([service.process for service in services], timeout=timeout)
    killed = [service.name for service in services if service.process in alive]
    for service in services:
        jobs.kill_session(service.process.pid, timeout=2.0)  # each service led a session of its own
    return killed


def _signal_group(process: psutil.Process, sig: signal.Signals) -> None:
    """The signal to the process's group when it leads one (every service does), else to the process alone;
    checked first to be the same process (psutil refuses a pid that has been reused since)."""
    with contextlib.suppress(psutil.Error, OSError):
        if not process.is_running():
            return
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
