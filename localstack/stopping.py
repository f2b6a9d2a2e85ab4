"""Stopping the local stack: its own processes when `make up` ends, or those an earlier one left running.

Three steps, in this order, each stopping its processes all at once and saying how long it took: first what may
start or restart jobs (beat, the worker, the web app), then the pipeline jobs (SIGTERM: each finishes its
micro-batch; SIGKILL past its grace, and its batch is replayed exactly once at the next start), then what they
read and write until their last batch (ClickHouse, the schema registry, Kafka, Redis). The whole stop keeps within
STOP_BUDGET_SECONDS, under the 30 s a Ctrl-C may take: the jobs get what the first step left of it, less the last
step's grace (about 20 s when the first step takes 2).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from localstack import leftovers, processes, run_state

APP_TIER = ("beat", "worker", "web")
STOP_BUDGET_SECONDS = 28
APP_STOP_TIMEOUT_SECONDS = 6
STOP_TIMEOUT_SECONDS = 5  # ClickHouse, the schema registry, Kafka and Redis: each stops in about a second
RECORD_SECONDS = 1  # kept for recording the jobs' runs once they are gone


def _say(message: str) -> None:
    print(f"clearflow: {message}", flush=True)


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def stop_stack(group: processes.ProcessGroup, *, run_root: Path) -> str:
    """Stop this stack's services and jobs, step by step; what to say about the jobs ("" when none ran)."""
    deadline = time.monotonic() + STOP_BUDGET_SECONDS
    app = [service.name for service in reversed(group.services) if service.name in APP_TIER]
    _stop_step(app, lambda: group.stop(APP_TIER, timeout=APP_STOP_TIMEOUT_SECONDS), APP_STOP_TIMEOUT_SECONDS)
    step = time.monotonic()
    stopped_jobs = stop_pipeline_jobs(run_root, timeout=job_grace(deadline))
    _say(f"{stopped_jobs or 'no pipeline job to stop'} ({time.monotonic() - step:.1f} s)")
    data = [service.name for service in reversed(group.services)]
    _stop_step(data, lambda: group.stop_all(timeout=STOP_TIMEOUT_SECONDS), STOP_TIMEOUT_SECONDS)
    return stopped_jobs


def _stop_step(names: list[str], stop: Callable[[], list[str]], grace: float) -> None:
    """Run one step (`stop` returns the names it had to kill) and say what it stopped, in how long."""
    if not names:
        return
    step = time.monotonic()
    killed = stop()
    words = f"stopped {_and(names)} in {time.monotonic() - step:.1f} s"
    if killed:
        were = "were" if len(killed) > 1 else "was"
        words += f" ({_and(killed)} did not stop within {grace:.0f} s and {were} killed)"
    _say(words)


def stop_earlier_stack(var_dir: Path, *, run_root: Path) -> str:
    """Stop what an earlier stack of this var directory left running because it did not stop (SIGKILL, the OOM
    killer), in the order of a stop; its pipeline jobs are recorded as stopped with the stack and resume from
    their checkpoints. What was said ("" when nothing was left). Called with the var directory's lock held."""
    found = leftovers.find(var_dir, run_root)
    if not found.count:
        run_state.remove_stack(var_dir)
        return ""
    step = time.monotonic()
    deadline = step + STOP_BUDGET_SECONDS
    killed = leftovers.stop_services(
        [service for service in found.services if service.name in APP_TIER], timeout=APP_STOP_TIMEOUT_SECONDS
    )
    if found.jobs:
        stop_pipeline_jobs(run_root, timeout=job_grace(deadline))
    killed += leftovers.stop_services(
        [service for service in found.services if service.name not in APP_TIER], timeout=STOP_TIMEOUT_SECONDS
    )
    run_state.remove_stack(var_dir)
    words = (
        f"found {found.count} process{'es' if found.count != 1 else ''} of an earlier stack that was not stopped "
        f"({found.words()}); stopped them in {time.monotonic() - step:.1f} s"
    )
    if killed:
        words += f" ({_and(killed)} had to be killed)"
    if found.pipeline_jobs:
        words += "; their pipelines resume from their checkpoints"
    _say(words)
    return words


def job_grace(deadline: float) -> float:
    """The jobs' grace: what is left until `deadline` after theirs, less the last step's (at least 10 s)."""
    return max(10.0, deadline - time.monotonic() - STOP_TIMEOUT_SECONDS - RECORD_SECONDS)


def stop_pipeline_jobs(run_root: Path, *, timeout: float) -> str:
    """Stop every pipeline job started under `run_root` (SIGKILL past `timeout` seconds), recorded as stopped with
    the stack (`worker.stack_stop.stop_stack_jobs`); what to tell the user ("" when none ran). Called once the
    worker is stopped."""
    kill_standby_jobs(run_root)
    try:
        import django

        quiet_django_logs()
        django.setup()
        from worker.stack_stop import stop_stack_jobs

        result = stop_stack_jobs(timeout=timeout)
    except Exception as error:  # never leave jobs behind: stop the processes even without the web app's code
        _say(f"could not record the pipeline jobs' stop ({error}); stopping their processes")
        from worker import jobs

        handles = jobs.find_jobs(run_root)
        for handle in handles:
            jobs.mark_stopped_with_stack(handle.run_dir)
        stopped = jobs.stop_jobs(handles, timeout=timeout)
        return stop_summary(len(stopped), sum(result.forced for result in stopped), recorded=False, grace=timeout)
    return stop_summary(result.jobs, result.forced, recorded=result.recorded, grace=timeout)


def kill_standby_jobs(run_root: Path) -> None:
    """SIGKILL to the standby jobs that wait for a pipeline: they run none, so nothing of theirs is lost, and one
    still starting finishes its rehearsal (seconds) before it reads a SIGTERM. With the worker stopped, none can
    be handed a pipeline meanwhile (a standby that was is the pipeline's job, and stops as one)."""
    from worker import jobs, standby

    with contextlib.suppress(OSError):
        for waiting in standby.waiting(run_root):
            jobs.force_kill(pid=waiting.handle.pid, process_started=waiting.handle.process_started)


def prepare() -> None:
    """Load Django now, while the stack runs, so that its stop does not wait seconds for it; a failure here is
    met again, and handled, by the stop."""
    import django

    quiet_django_logs()
    with contextlib.suppress(Exception):
        django.setup()


def quiet_django_logs() -> None:
    """The stack's own messages only: apps say hello at INFO when Django starts in this process."""
    import logging

    logging.getLogger("axes").setLevel(logging.WARNING)


def stop_summary(count: int, forced: int, *, recorded: bool, grace: float) -> str:
    if count == 0:
        return ""
    words = (
        f"stopped {count} pipeline job{'s' if count != 1 else ''}; "
        f"{'they resume' if count != 1 else 'it resumes'} on the next `make up`"
    )
    if forced:
        words += (
            f" ({forced} did not stop within {grace:.0f} s and {'were' if forced != 1 else 'was'} "
            "killed: the last micro-batch is replayed, exactly once)"
        )
    if not recorded:
        words += " (the database did not answer: the next start records how they ended)"
    return words


def run_root_of(var_dir: Path) -> Path:
    """Where the stack's worker puts its jobs' run directories (settings.CLEARFLOW_RUN_ROOT)."""
    return Path(os.environ.get("CLEARFLOW_RUN_ROOT") or var_dir / "runs")
