"""A stack that could not stop (its `make up` SIGKILLed) leaves nothing that the next one refuses or forgets.

Its services end with it (the parent-death signal); what it leaves running on purpose (Redis, the pipeline jobs,
which run detached) the next `make up` finds, names and stops before it starts, and the pipeline resumes from its
checkpoint exactly once. SIGTERM then stops the whole stack within 30 s and no process of its var directory is
left. A port another program holds is still refused, with that program named; a pid reused by another program
is never taken for the stack's.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from localstack import leftovers, run_state
from localstack.processes import wait_until
from tests.localstack.stack_env import stack_env
from tests.localstack.test_stack_jobs import (
    JOB_TIMEOUT,
    REPO_ROOT,
    Stack,
    _events,
    _job_processes,
    _not_zombie,
    _table_counts,
    _wait_status,
    deploy_counted_pipeline,
    stack_under_test,
)
from tests.spark_jobs.engine_helpers import produce

# The services that must not outlive their `make up` (Redis may: it keeps the detached jobs' leases).
ENDS_WITH_THE_STACK = {"web", "worker", "beat", "kafka", "clickhouse", "schema-registry"}


def _drop_database(name: str) -> None:
    with psycopg.connect("postgres://clearflow@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _var_processes(var_dir: Path) -> list[str]:
    """Every process whose command line names the var directory (`pgrep -f`, which never lists itself)."""
    return subprocess.run(["pgrep", "-af", str(var_dir)], capture_output=True, text=True).stdout.splitlines()


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with stack_under_test("stack-leftovers") as stack:
        yield stack


def test_a_stack_killed_hard_ends_its_services_and_the_next_one_stops_what_it_left(stack: Stack) -> None:
    stack.start()
    topic, table, pipeline_id = deploy_counted_pipeline(stack, "survives-a-hard-kill")
    recorded = {s["name"]: s["pid"] for s in (run_state.read_stack(stack.var_dir) or {})["services"]}
    assert set(recorded) >= ENDS_WITH_THE_STACK | {"redis"}, recorded
    supervisor = run_state.running_pid(stack.var_dir)
    assert supervisor and supervisor > 0
    jobs_before = _job_processes(stack)
    assert jobs_before

    os.kill(supervisor, signal.SIGKILL)  # the OOM killer, or a closed SSH session without job control

    def services_left() -> list[str]:
        return sorted(name for name, pid in recorded.items() if name in ENDS_WITH_THE_STACK and _not_zombie(pid))

    assert wait_until(lambda: not services_left(), timeout=60, interval=0.5), services_left()
    status = subprocess.run(["make", "-s", "status"], cwd=REPO_ROOT, env=stack.env, capture_output=True, text=True)
    assert "ClearFlow is not running here" in status.stdout, status.stdout
    assert "An earlier stack here was not stopped" in status.stdout and "redis" in status.stdout, status.stdout
    left_running = {pid for pid in jobs_before if _not_zombie(pid)} | {recorded["redis"]}

    run = stack.start()  # not refused for the ports its own leftovers held: it stops them, then starts
    found = re.search(
        r"clearflow: found (\d+) process(?:es)? of an earlier stack that was not stopped \((.+?)\); stopped them",
        run.output(),
    )
    assert found, run.output()
    assert "redis" in found.group(2) and "pipeline job" in found.group(2), found.group(0)
    assert not [pid for pid in left_running if _not_zombie(pid)]
    assert "already in use" not in run.output()

    # The pipeline resumes from its checkpoint: new events and repeats of old ones, each row once.
    produce(stack.env["KAFKA_BOOTSTRAP_SERVERS"], topic, _events("e", 300, 200) + _events("e", 250, 100))
    _wait_status(stack, pipeline_id, "running")
    assert wait_until(lambda: _table_counts(stack, table)[1] >= 500, timeout=JOB_TIMEOUT, interval=1.0)
    time.sleep(3)  # a few more micro-batches: a row written twice would show now
    assert _table_counts(stack, table) == (500, 500)

    # SIGTERM (what `make down` sends) stops everything, the job included, within 30 s.
    supervisor = run_state.running_pid(stack.var_dir)
    assert supervisor and supervisor > 0 and _job_processes(stack)
    signalled = time.monotonic()
    os.kill(supervisor, signal.SIGTERM)
    run.process.wait(timeout=60)
    took = time.monotonic() - signalled
    output = run.output()
    print(output[output.index("clearflow: stopping") :])
    assert took < 30, output
    assert re.search(r"clearflow: stopped beat, worker and web in [\d.]+ s", output), output
    assert re.search(r"clearflow: stopped 1 pipeline job; it resumes on the next `make up` \([\d.]+ s\)", output)
    assert re.search(r"clearflow: stopped in [\d.]+ s", output), output
    assert wait_until(lambda: not _var_processes(stack.var_dir), timeout=5), _var_processes(stack.var_dir)
    assert not _job_processes(stack)
    outcomes = stack.sql("SELECT outcome FROM pipelines_pipelinerun WHERE pipeline_id = %s ORDER BY id", pipeline_id)
    assert ("failed",) not in outcomes, outcomes


def test_a_port_held_by_another_program_is_refused_with_its_name(tmp_path: Path) -> None:
    made = stack_env(tmp_path / "var", database_prefix="clearflow_leftovers_port")
    port = made.ports["kafka"]
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import socket, time; s = socket.create_server(('127.0.0.1', {port})); time.sleep(300)"]
    )
    try:
        assert wait_until(lambda: _listens(port), timeout=10)
        up = [sys.executable, "-m", "localstack", "up"]
        result = subprocess.run(up, cwd="/", env=made.env, capture_output=True, text=True, timeout=180)
        assert result.returncode == 1, result.stdout
        assert f"port {port} for Kafka is already in use by another program (python" in result.stdout, result.stdout
        assert f"(pid {holder.pid}): {sys.executable} -c import socket" in result.stdout, result.stdout
        assert holder.poll() is None  # not its own: refused, never stopped
    finally:
        holder.kill()
        holder.wait()
        _drop_database(made.database)


def _listens(port: int) -> bool:
    return any(c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in psutil.net_connections("tcp"))


def test_a_pid_reused_by_another_program_is_never_stopped(tmp_path: Path) -> None:
    """stack.json records a service's pid and start time: a live process with that pid but another start is not
    the stack's, and `make down` leaves it alone; with its own start time it is stopped and named."""
    var_dir = tmp_path / "var"
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)
    env = {**os.environ, "CLEARFLOW_VAR_DIR": str(var_dir), "CLEARFLOW_RUN_ROOT": str(var_dir / "runs")}
    try:
        record = {**leftovers.process_record(other.pid), "name": "web"}

        run_state.write_stack(var_dir, {"services": [{**record, "started": record["started"] - 60}]})
        down = subprocess.run(
            [sys.executable, "-m", "localstack", "down"], cwd=REPO_ROOT, env=env, capture_output=True, text=True
        )
        assert "ClearFlow is not running here" in down.stdout, down.stdout + down.stderr
        assert other.poll() is None

        run_state.write_stack(var_dir, {"services": [record]})
        down = subprocess.run(
            [sys.executable, "-m", "localstack", "down"], cwd=REPO_ROOT, env=env, capture_output=True, text=True
        )
        assert "found 1 process of an earlier stack that was not stopped (web); stopped them" in down.stdout, (
            down.stdout + down.stderr
        )
        assert other.wait(timeout=5) == -signal.SIGTERM
    finally:
        other.kill()
        other.wait()
