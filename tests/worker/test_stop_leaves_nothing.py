"""A stopped job leaves no process behind, the standby included: every process a standby started (supervisor,
Python driver, JVM, Spark's Python daemon and its workers) is gone when the stop returns, whether it stopped in
time or was killed after the stop timeout, and also when the stack stops while the standby is still starting.
Real standby jobs, stopped the way the stack's stop (`make up`'s Ctrl-C, `make down`, the benches) does."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests.worker.helpers import wait_for
from tests.worker.test_standby import STANDBY_START_TIMEOUT, template
from worker import jobs, standby

pytestmark = [pytest.mark.spark]


def processes_of(supervisor: int) -> dict[int, str]:
    """pid -> command line of the supervisor and everything it started, as `ps` shows them now."""
    found = {}
    try:
        root = psutil.Process(supervisor)
        members = [root, *root.children(recursive=True)]
    except psutil.Error:
        return {}
    for process in members:
        try:
            found[process.pid] = " ".join(process.cmdline())
        except psutil.Error:
            continue
    return found


def left_over(pids: dict[int, str]) -> dict[int, str]:
    """Those of `pids` still running (a zombie waiting for its parent's wait has ended)."""
    left = {}
    for pid, command in pids.items():
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE:
                left[pid] = command
        except psutil.Error:
            continue
    return left


def started_standby(run_root: Path) -> standby.Standby:
    [started] = standby.ensure(template(run_root, driver_memory="512m"), run_root=run_root, count=1)
    return started


@pytest.mark.timeout(900)
def test_a_standby_killed_after_the_stop_timeout_leaves_no_process_not_even_sparks_python_daemon(tmp_path):
    run_root = tmp_path / "runs"
    started = started_standby(run_root)
    try:
        # Ready: its rehearsal ran Python tasks, so Spark's Python daemon and its workers run too.
        wait_for(lambda: started.ready, timeout=STANDBY_START_TIMEOUT, interval=0.5)
        before = processes_of(started.handle.pid)
        assert any("python_daemon" in command for command in before.values()), before

        # The stop timeout already passed (0 s): the stack's stop kills it.
        [result] = jobs.stop_jobs(jobs.find_jobs(run_root), timeout=0)
        assert result.forced
        assert left_over(before) == {}
        assert jobs.find_jobs(run_root) == []
    finally:
        for handle in jobs.find_jobs(run_root):
            jobs.force_kill(pid=handle.pid, process_started=handle.process_started)


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True)
def test_the_stacks_stop_while_the_standby_still_starts_leaves_no_process(tmp_path, settings):
    from worker.stack_stop import stop_stack_jobs

    run_root = tmp_path / "runs"
    settings.CLEARFLOW_RUN_ROOT = str(run_root)
    started = started_standby(run_root)
    seen: dict[int, str] = {}
    try:

        def jvm_up() -> bool:  # the JVM runs, the session is not ready yet
            seen.update(processes_of(started.handle.pid))
            return any(command.startswith(("java", "/usr")) and "java" in command for command in seen.values())

        wait_for(jvm_up, timeout=STANDBY_START_TIMEOUT, interval=0.2)
        assert not started.ready
        result = stop_stack_jobs(timeout=5)
        assert result.jobs == 0  # a standby is no pipeline's job
        seen.update(processes_of(started.handle.pid))
        assert left_over(seen) == {}
        assert jobs.find_jobs(run_root) == []
    finally:
        for handle in jobs.find_jobs(run_root):
            jobs.force_kill(pid=handle.pid, process_started=handle.process_started)
