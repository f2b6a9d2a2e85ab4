"""`make up DETACH=1`, `make down`, `make status`: the local stack from another shell.

They find the stack through its var directory (`localstack.run_state`): the lock `make up` holds says whether
and which process runs, `stack.json` what it started. `make down` sends that process SIGTERM, as Ctrl-C would:
it stops its pipeline jobs (they resume at the next start) and its services, and `make down` waits for it.
When no `make up` runs but an earlier one that did not stop left processes running (`localstack.leftovers`),
`make status` lists them and `make down` stops them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from typing import Any

from localstack import leftovers, run_state
from localstack.stack_config import DETACHED_VARIABLE, REPO_ROOT, StackConfig
from localstack.stopping import run_root_of

DOWN_TIMEOUT_SECONDS = 120
DETACHED_START_TIMEOUT_SECONDS = 900  # a first start installs nothing here (make did), but migrates and formats


def _say(message: str) -> None:
    print(f"clearflow: {message}", flush=True)


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# --- make up DETACH=1 ----------------------------------------------------------------------------------------


def up_detached() -> int:
    """Start the stack in the background (its own session, output in var/log/up.log), show its output until the
    banner, and return; `make down` stops it."""
    config = StackConfig.from_env()
    holder = run_state.running_pid(config.var_dir)
    if holder is not None:
        _say(f"ClearFlow is already running here (pid {holder}). Stop it with `make down`; see `make status`.")
        return 1
    log_path = config.var_dir / "log" / "up.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        offset = log.tell()
        process = subprocess.Popen(
            [sys.executable, "-m", "localstack", "up"],
            cwd=REPO_ROOT,
            env={**os.environ, DETACHED_VARIABLE: "1"},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C and a closed terminal no longer reach it: `make down` stops it
        )
    deadline = time.monotonic() + DETACHED_START_TIMEOUT_SECONDS
    with open(log_path, "rb") as log:
        log.seek(offset)
        shown = b""
        while time.monotonic() < deadline:
            chunk = log.read()
            if chunk:
                sys.stdout.write(chunk.decode("utf-8", errors="replace"))
                sys.stdout.flush()
                shown += chunk
            if b"Stop: `make down`" in shown:
                _say(f"running in the background (pid {process.pid}, output in {log_path})")
                return 0
            if process.poll() is not None:
                sys.stdout.write(log.read().decode("utf-8", errors="replace"))
                _say(f"`make up` ended with code {process.returncode} before it was up; see {log_path}")
                return process.returncode or 1
            time.sleep(0.2)
    _say(f"not up after {DETACHED_START_TIMEOUT_SECONDS} s; it keeps starting in the background ({log_path})")
    return 1


# --- make down -----------------------------------------------------------------------------------------------


def down() -> int:
    """Stop the stack of this var directory (SIGTERM, as Ctrl-C) and wait until it has stopped; stop what a stack
    that did not stop left running."""
    config = StackConfig.from_env()
    pid = run_state.running_pid(config.var_dir)
    if pid is None:
        return _stop_earlier_stack(config)
    if pid < 0:
        _say(f"ClearFlow runs here but its pid is unreadable ({run_state.run_dir(config.var_dir)}); stop it there.")
        return 1
    _say(f"stopping ClearFlow (pid {pid}); its pipeline jobs stop after their micro-batch")
    started = time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    while run_state.running_pid(config.var_dir) is not None or _alive(pid):  # the lock goes just before the exit
        if time.monotonic() - started > DOWN_TIMEOUT_SECONDS:
            _say(f"still stopping after {DOWN_TIMEOUT_SECONDS} s; see {config.var_dir / 'log' / 'up.log'}")
            return 1
        time.sleep(0.2)
    last = run_state.read_last_stop(config.var_dir) or {}
    if last.get("pipeline_jobs"):
        _say(str(last["pipeline_jobs"]))
    _say(f"stopped in {time.monotonic() - started:.1f} s")
    return 0


def _stop_earlier_stack(config: StackConfig) -> int:
    """No `make up` runs here: stop what an earlier one left running, under the lock a `make up` takes (so none
    starts meanwhile)."""
    from localstack.preflight import StackError, acquire_lock
    from localstack.stopping import stop_earlier_stack

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
    os.environ.setdefault("CLEARFLOW_VAR_DIR", str(config.var_dir))
    try:
        lock_fd = acquire_lock(config.var_dir)
    except StackError as error:  # a `make up` started just now
        _say(str(error))
        return 1
    try:
        if not stop_earlier_stack(config.var_dir, run_root=run_root_of(config.var_dir)):
            _say(f"ClearFlow is not running here ({config.var_dir}).")
    finally:
        os.close(lock_fd)
    return 0


# --- make status ---------------------------------------------------------------------------------------------


def status() -> int:
    """What runs: the stack's process and services, and each pipeline job with its pipeline."""
    config = StackConfig.from_env()
    pid = run_state.running_pid(config.var_dir)
    stack = run_state.read_stack(config.var_dir) if pid is not None else None
    if pid is None:
        print(f"ClearFlow is not running here ({config.var_dir}). Start it with `make up`.")
        _print_earlier_stack(config)
    else:
        since = f", up {_ago(time.time() - stack['started_at'])}" if stack and stack.get("started_at") else ""
        print(f"ClearFlow is running here (pid {pid}{since}): {config.url}/")
        print()
        print(f"  {'service':<11} {'pid':>8}  {'state':<7} {'address':<28} log")
        for service in (stack or {}).get("services", []):
            alive = _alive(service.get("pid"), service.get("started"))
            print(
                f"  {service['name']:<11} {service['pid']:>8}  {'up' if alive else 'DOWN':<7} "
                f"{service.get('address') or '-':<28} {service.get('log', '')}"
            )
        if stack and not any(s.get("name") == "redis" for s in stack.get("services", [])):
            address = f"{config.redis_host}:{config.redis_port}"
            print(f"  {'redis':<11} {'-':>8}  {'up':<7} {address:<28} (one that already ran: not the stack's)")
    print()
    _print_jobs(config, stack_runs=pid is not None)
    return 0


def _alive(pid: Any, started: float | None = None) -> bool:
    from worker import jobs

    try:
        return jobs.live_process(int(pid), started) is not None
    except (TypeError, ValueError):
        return False


def _print_earlier_stack(config: StackConfig) -> None:
    """The services an earlier stack that did not stop left running (its jobs are listed below)."""
    found = leftovers.find(config.var_dir, run_root_of(config.var_dir))
    if not found.services:
        return
    print("An earlier stack here was not stopped. Still running (`make up` or `make down` stops them):")
    for service in found.services:
        print(f"  {service.name:<15} pid {service.process.pid:>8}  {' '.join(service.process.cmdline())[:80]}")


def _print_jobs(config: StackConfig, *, stack_runs: bool) -> None:
    """Each job process of this stack with its pipeline (from the database, when it answers), and the deployed
    pipelines that wait for the next start."""
    from worker import jobs, standby

    handles = {h.run_dir: h for h in jobs.find_jobs(run_root_of(config.var_dir))}
    pipelines = _pipelines_by_job(config)
    if not handles:
        print("  No pipeline job runs.")
    else:
        print(f"  Pipeline jobs ({len(handles)}):")
        for run_dir, handle in sorted(handles.items()):
            job_name = standby.job_name_of(run_dir)
            pipeline = pipelines.get(job_name, {})
            label = f"{pipeline['name']} ({job_name})" if pipeline else job_name
            if standby.is_waiting(run_dir):
                label = "standby (waits for the next deploy)"
            print(
                f"    {label:<40} {pipeline.get('status', ''):<10} job pid {handle.pid}, "
                f"up {_ago(time.time() - handle.process_started)}, log {handle.log_path}"
            )
    running = {standby.job_name_of(run_dir) for run_dir in handles}
    waiting = [p for name, p in pipelines.items() if p["waits"] and name not in running]
    if waiting:
        names = ", ".join(p["name"] for p in waiting)
        if stack_runs:
            print(f"  Deployed, their job not started yet: {names} (the worker starts them; see their pages).")
        else:
            print(f"  Deployed, not running now: {names}: they start with the stack.")


def _pipelines_by_job(config: StackConfig) -> dict[str, dict[str, Any]]:
    """job name -> {name, status, waits}: every deployed pipeline; {} when the database does not answer."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
    os.environ.setdefault("CLEARFLOW_VAR_DIR", str(config.var_dir))
    try:
        import django

        from localstack.stopping import quiet_django_logs

        quiet_django_logs()
        django.setup()
        from webapp.pipelines.models import Pipeline, PipelineStatus

        deployed = Pipeline.objects.exclude(status__in=[PipelineStatus.DRAFT, PipelineStatus.STOPPED])
        return {
            p.job_name: {
                "name": p.name,
                "status": p.get_status_display().lower(),
                "waits": p.status in (PipelineStatus.DEPLOY_REQUESTED, PipelineStatus.RUNNING),
            }
            for p in deployed
        }
    except Exception as error:
        print(f"  (could not read the pipelines from the database: {str(error).strip().splitlines()[0]})")
        return {}
