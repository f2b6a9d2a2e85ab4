"""How a worker reaches a run's job: through its process on this host, through its lease from any other host.

`control_for(...)` answers the same questions (alive? how did it end? has its query started? its log's last
lines) and takes the same actions (stop after the micro-batch, kill) either way, so the supervisor's rules do
not depend on where the job runs. On this host the process decides (`worker.jobs`: `/proc`, signals); elsewhere
the lease the job's supervisor holds in Redis decides (`worker.leases`): a lease that expired means the job and
maybe its host are gone, and the job stopped itself before that happened.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from worker import jobs, leases, redis_state


class JobControl(Protocol):
    here: bool

    def state(self) -> jobs.JobState: ...

    def request_stop(self) -> bool: ...

    def force_kill(self) -> bool: ...

    def started_application(self) -> str | None: ...

    def log_tail(self, secrets: Iterable[str]) -> str: ...

    def lost_reason(self) -> str | None: ...

    def wait_gone(self, timeout: float) -> bool: ...


@dataclass(frozen=True)
class LocalJob:
    """A job on this host: its supervisor's pid and start time, its run directory and log."""

    pid: int | None
    process_started: float | None
    run_dir: str
    log_path: str
    here: bool = True

    def state(self) -> jobs.JobState:
        return jobs.job_state(pid=self.pid, process_started=self.process_started, run_dir=self.run_dir)

    def request_stop(self) -> bool:
        return jobs.request_stop(pid=self.pid, process_started=self.process_started)

    def force_kill(self) -> bool:
        return jobs.force_kill(pid=self.pid, process_started=self.process_started)

    def started_application(self) -> str | None:
        return jobs.started_application(self.log_path)

    def log_tail(self, secrets: Iterable[str]) -> str:
        return jobs.log_tail(self.log_path, lines=200, secrets=secrets)

    def lost_reason(self) -> str | None:
        return None

    def wait_gone(self, timeout: float) -> bool:
        return jobs.wait_gone(pid=self.pid, process_started=self.process_started, timeout=timeout)


@dataclass(frozen=True)
class LeasedJob:
    """A job on another host, seen through its lease. Redis errors are raised: they say nothing about the job."""

    host: str
    run_dir: str
    here: bool = False

    def _lease(self) -> leases.Lease | None:
        return leases.read(redis_state.client(), self.run_dir)

    def state(self) -> jobs.JobState:
        lease = self._lease()
        if lease is None:
            return jobs.JobState(alive=False)
        return jobs.JobState(alive=not lease.ended, exit_code=lease.exit_code)

    def request_stop(self) -> bool:
        return leases.request_stop(redis_state.client(), self.run_dir)

    def force_kill(self) -> bool:
        return leases.request_stop(redis_state.client(), self.run_dir, kill=True)

    def started_application(self) -> str | None:
        lease = self._lease()
        return lease.application if lease is not None else None

    def log_tail(self, secrets: Iterable[str]) -> str:
        lease = self._lease()
        return jobs.redact(lease.log_tail, secrets) if lease is not None else ""  # redacted there too

    def lost_reason(self) -> str | None:
        if self._lease() is not None:
            return None
        return (
            f"The job on host {self.host} stopped renewing its lease (the host is down, cut off from Redis, or the "
            "job's supervisor was killed); a job that cannot renew its lease stops itself."
        )

    def wait_gone(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if not self.state().alive:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def control_for(
    *, host: str, pid: int | None, process_started: float | None, run_dir: str, log_path: str = ""
) -> JobControl:
    """The way to reach a job recorded with these fields (a run, or what a deleted pipeline's run left)."""
    if not host or host == jobs.this_host():
        return LocalJob(pid=pid, process_started=process_started, run_dir=run_dir, log_path=log_path)
    return LeasedJob(host=host, run_dir=run_dir)
