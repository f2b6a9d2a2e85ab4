"""The stack owns its pipeline jobs: stopping `make up` stops them, and its next start resumes them exactly once.

`make up` runs as a user runs it, on free ports (environment overrides) with its state in a temporary directory
and its own database: first with stdin closed, stopped with SIGINT to its process group; then from a terminal
(a pty), stopped with Ctrl-C typed into it. A pipeline is deployed through the REST API in between; rows are
counted in the stack's ClickHouse, job processes with `ps`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import tempfile
import termios
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest

from localstack.processes import wait_until
from tests.localstack.stack_env import stack_env
from tests.spark_jobs.engine_helpers import event, produce
from tests.worker.helpers import api_spec

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 600  # a cold start on a loaded machine: migrations, Kafka, ClickHouse, gunicorn, Celery
JOB_TIMEOUT = 300


@dataclass
class StackRun:
    """One `make up` of the stack under test."""

    process: subprocess.Popen[bytes]
    output_path: Path
    pty_master: int | None = None
    reader: threading.Thread | None = None

    def output(self) -> str:
        return self.output_path.read_text(errors="replace")

    def up(self) -> bool:
        return "ClearFlow is up" in self.output()


@dataclass
class Stack:
    var_dir: Path
    env: dict[str, str]
    ports: dict[str, int]
    database: str
    token: str = ""
    state: dict[str, Any] = field(default_factory=dict)  # what the first test leaves for the second

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['web']}"

    def start(self, *, terminal: bool = False) -> StackRun:
        """`make up` with stdin closed, or inside a terminal (a pty that is its controlling terminal)."""
        output_path = self.var_dir / f"make-up-{time.monotonic_ns()}.log"
        if not terminal:
            with open(output_path, "wb") as output:
                process = subprocess.Popen(
                    ["make", "-s", "up"],
                    cwd=REPO_ROOT,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group, as a shell gives a foreground job
                )
            run = StackRun(process, output_path)
        else:
            output_path.touch()
            master, slave = pty.openpty()

            def controlling_terminal() -> None:  # what a terminal emulator does for the shell it starts
                os.setsid()
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)

            process = subprocess.Popen(
                ["make", "-s", "up"],
                cwd=REPO_ROOT,
                env={**self.env, "TERM": "xterm"},
                stdin=slave,
                stdout=slave,
                stderr=slave,
                preexec_fn=controlling_terminal,  # the child must own the terminal before it runs make
            )
            os.close(slave)
            run = StackRun(process, output_path, pty_master=master)
            run.reader = threading.Thread(target=_copy_terminal, args=(master, output_path), daemon=True)
            run.reader.start()
        self.state["run"] = run  # stopped at the end, whatever happens
        assert wait_until(lambda: run.up() or process.poll() is not None, timeout=START_TIMEOUT), run.output()
        assert process.poll() is None and run.up(), run.output()
        return run

    def api(self, method: str, path: str, body: dict | None = None) -> Any:
        request = urllib.request.Request(
            f"{self.base_url}/api/v1/{path}",
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{method} {path}: {error.code} {error.read().decode()}") from None

    def sql(self, query: str, *params: Any) -> list[tuple]:
        with psycopg.connect(self.env["DATABASE_URL"]) as conn:
            return conn.execute(query, params).fetchall()

    def clickhouse(self, query: str) -> list[tuple]:
        url = f"http://127.0.0.1:{self.ports['clickhouse']}/?query={urllib.parse.quote(f'{query} FORMAT JSONCompact')}"
        with urllib.request.urlopen(url, timeout=30) as response:
            return [tuple(row) for row in json.load(response)["data"]]


def _copy_terminal(master: int, output_path: Path) -> None:
    """Read what the terminal shows into a file (a pty whose output nobody reads blocks its writers)."""
    with open(output_path, "ab", buffering=0) as output:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            output.write(data)


@contextlib.contextmanager
def stack_under_test(name: str) -> Iterator[Stack]:
    """A stack's environment (free ports, its own database) in a var directory of its own; at the end, whatever it
    runs is stopped (`make down` also stops what a stack killed hard left) and its database dropped."""
    # Not under pytest's numbered temp directories: another pytest run of the same user may rotate those away
    # while this stack still runs in it.
    var_dir = Path(tempfile.mkdtemp(prefix=f"clearflow-{name}-"))
    made = stack_env(var_dir, database_prefix=f"clearflow_{name.replace('-', '_')}")
    env, ports, database = made.env, made.ports, made.database
    env.update(
        CLEARFLOW_WATCH_INTERVAL="1",
        CLEARFLOW_TRIGGER_INTERVAL="500 milliseconds",
        CLEARFLOW_SPARK_CONF="spark.ui.enabled=false",
    )
    stack = Stack(var_dir, env, ports, database)
    try:
        yield stack
    finally:
        for pid in _job_processes(stack):  # only if a test failed half-way
            _kill(pid)
        running = stack.state.get("run")
        if running is not None and running.process.poll() is None:
            os.killpg(running.process.pid, signal.SIGTERM)
            running.process.wait(timeout=120)
        # The one started in the background, or what a stack killed hard left.
        subprocess.run(["make", "-s", "down"], cwd=REPO_ROOT, env=env, timeout=180, check=False)
        with psycopg.connect("postgres://clearflow@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        shutil.rmtree(var_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with stack_under_test("stack-jobs") as stack:
        yield stack


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _job_processes(stack: Stack) -> set[int]:
    """Every process of the stack's pipeline jobs: each job supervisor (`worker.jobwrap`, with a run directory
    under the stack's var dir) and every process in its session (the Spark driver, its JVM, Python workers)."""
    supervisors = set()
    for process in psutil.process_iter(["pid", "cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        if "worker.jobwrap" in command and str(stack.var_dir) in command:
            supervisors.add(process.info["pid"])
    members = set()
    for process in psutil.process_iter(["pid", "cmdline", "status"]):
        if process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            session = os.getsid(process.info["pid"])
        except OSError:
            continue
        command = " ".join(process.info["cmdline"] or [])
        ours = str(stack.var_dir) in command and ("spark_jobs" in command or "jobwrap" in command)
        if session in supervisors or ours:
            members.add(process.info["pid"])
    return members


def _wait_status(stack: Stack, pipeline_id: int, wanted: str, timeout: float = JOB_TIMEOUT) -> dict:
    def reached() -> bool:
        status = stack.api("GET", f"pipelines/{pipeline_id}/status/")
        assert not (status["status"] == "failed" and status.get("restart_at") is None), status
        return status["status"] == wanted

    assert wait_until(reached, timeout=timeout, interval=1.0), stack.api("GET", f"pipelines/{pipeline_id}/status/")
    return stack.api("GET", f"pipelines/{pipeline_id}/status/")


def _table_counts(stack: Stack, table: str) -> tuple[int, int]:
    if not stack.clickhouse(f"EXISTS TABLE default.`{table}`")[0][0]:
        return 0, 0
    total, distinct = stack.clickhouse(f"SELECT count(), uniqExact(event_id) FROM default.`{table}`")[0]
    return int(total), int(distinct)


def _events(prefix: str, start: int, unique: int) -> list[tuple[int, dict]]:
    return [(i % 2, event(f"{prefix}-{i:05d}", n=i)) for i in range(start, start + unique)]


def _topic(stack: Stack) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"stack-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": stack.env["KAFKA_BOOTSTRAP_SERVERS"], "log_level": 0})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(60)
    return name


def deploy_counted_pipeline(stack: Stack, name: str) -> tuple[str, str, int]:
    """An API token for the stack, a topic with 300 unique events and 30 repeats, and a pipeline `name` deployed
    from it, running, with its 300 rows in ClickHouse: its topic, table and id."""
    stack.token = subprocess.run(
        [str(REPO_ROOT / ".venv" / "bin" / "python"), "manage.py", "create_api_token", "admin", "--name", "tests"],
        cwd=REPO_ROOT,
        env={**stack.env, "DJANGO_SETTINGS_MODULE": "webapp.config.settings"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    topic = _topic(stack)
    bootstrap = stack.env["KAFKA_BOOTSTRAP_SERVERS"]
    produce(bootstrap, topic, _events("e", 0, 300) + _events("e", 0, 30))  # 300 unique, 30 repeated
    kafka = stack.api("POST", "connections/kafka/", {"name": "stack kafka", "bootstrap_servers": bootstrap})
    clickhouse = stack.api(
        "POST", "connections/clickhouse/", {"name": "stack ch", "host": "127.0.0.1", "port": stack.ports["clickhouse"]}
    )
    table = f"stack_{uuid.uuid4().hex[:8]}"
    pipeline = stack.api(
        "POST",
        "pipelines/",
        {
            "name": name,
            "kafka_connection": kafka["id"],
            "clickhouse_connection": clickhouse["id"],
            "spec": api_spec(topic, table),
        },
    )
    stack.api("POST", f"pipelines/{pipeline['id']}/deploy/")
    _wait_status(stack, pipeline["id"], "running")
    assert wait_until(lambda: _table_counts(stack, table) == (300, 300), timeout=JOB_TIMEOUT, interval=1.0), (
        _table_counts(stack, table)
    )
    return topic, table, pipeline["id"]


def test_stopping_make_up_stops_its_pipeline_jobs(stack: Stack) -> None:
    run = stack.start()  # stdin closed: nothing may wait for an answer
    assert "Password" not in run.output()
    topic, table, pipeline_id = deploy_counted_pipeline(stack, "owned-by-the-stack")
    bootstrap = stack.env["KAFKA_BOOTSTRAP_SERVERS"]
    stack.state.update(topic=topic, table=table, pipeline_id=pipeline_id)

    # The worker keeps a standby job (JVM and session up) for the next deploy: Ctrl-C must stop it too.
    assert wait_until(lambda: any("--standby" in c for c in _commands(_job_processes(stack))), timeout=JOB_TIMEOUT)

    # More events just before the stop: the job is likely busy with them when Ctrl-C comes.
    produce(bootstrap, topic, _events("e", 300, 200) + _events("e", 100, 50))
    job_processes = _job_processes(stack)
    commands = _commands(job_processes)
    assert any("worker.jobwrap" in c for c in commands) and any("spark_jobs.run" in c for c in commands), commands
    assert any("java" in c for c in commands), commands  # Spark's JVM, in the job's session

    signalled = time.monotonic()
    os.killpg(run.process.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground process group
    assert wait_until(lambda: not _job_processes(stack), timeout=90, interval=0.2), _job_processes(stack)
    jobs_gone_after = time.monotonic() - signalled
    run.process.wait(timeout=120)
    stopped_after = time.monotonic() - signalled
    print(f"Ctrl-C -> every job process gone: {jobs_gone_after:.1f} s; -> make up ended: {stopped_after:.1f} s")

    output = run.output()
    # The standby ran no pipeline: it is stopped, not counted.
    assert "clearflow: stopped 1 pipeline job; it resumes on the next `make up`" in output, output
    assert re.search(r"clearflow: stopped in [\d.]+ s\n", output), output
    assert not [pid for pid in job_processes if psutil.pid_exists(pid) and _not_zombie(pid)]
    # Recorded as stopped with the stack, not as a failure; the pipeline stays deployed. A job that did not finish
    # its micro-batch within its grace (a loaded machine) is killed, says so, and has no exit code.
    (outcome, exit_code), *_ = stack.sql(
        "SELECT outcome, exit_code FROM pipelines_pipelinerun WHERE pipeline_id = %s ORDER BY id DESC",
        pipeline_id,
    )
    killed = "1 did not stop within" in output and "was killed: the last micro-batch is replayed" in output
    assert (outcome, exit_code) == ("stack_stop", None if killed else 0), output
    assert stack.sql("SELECT status FROM pipelines_pipeline WHERE id = %s", pipeline_id) == [("deploy_requested",)]

    status = subprocess.run(["make", "-s", "status"], cwd=REPO_ROOT, env=stack.env, capture_output=True, text=True)
    assert "ClearFlow is not running here" in status.stdout, status.stdout + status.stderr
    assert "Deployed, not running now: owned-by-the-stack: they start with the stack." in status.stdout


def _commands(pids: set[int]) -> list[str]:
    commands = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            commands.append(" ".join(psutil.Process(pid).cmdline()))
    return commands


def _not_zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_the_next_start_resumes_the_pipeline_exactly_once(stack: Stack) -> None:
    if "pipeline_id" not in stack.state:
        pytest.skip("needs the pipeline the previous test deployed and stopped with the stack")
    topic, table, pipeline_id = stack.state["topic"], stack.state["table"], stack.state["pipeline_id"]
    bootstrap = stack.env["KAFKA_BOOTSTRAP_SERVERS"]

    run = stack.start(terminal=True)  # from a terminal this time: still no prompt
    assert "Password" not in run.output()
    # New events, and repeats of events written before the stop.
    produce(bootstrap, topic, _events("e", 500, 200) + _events("e", 350, 100))
    _wait_status(stack, pipeline_id, "running")
    assert wait_until(lambda: _table_counts(stack, table)[1] >= 700, timeout=JOB_TIMEOUT, interval=1.0)
    time.sleep(3)  # a few more micro-batches: anything written twice would show now
    assert _table_counts(stack, table) == (700, 700)  # nothing lost, nothing doubled
    runs = stack.sql(
        "SELECT outcome, attempt FROM pipelines_pipelinerun WHERE pipeline_id = %s ORDER BY id", pipeline_id
    )
    assert runs == [("stack_stop", 1), ("", 1)]  # resumed as a new first attempt: no failure counted
    status = subprocess.run(["make", "-s", "status"], cwd=REPO_ROOT, env=stack.env, capture_output=True, text=True)
    assert re.search(r"owned-by-the-stack \(pipeline-\d+\)\s+running\s+job pid \d+", status.stdout), status.stdout

    assert run.pty_master is not None
    os.write(run.pty_master, b"\x03")  # Ctrl-C typed into the terminal
    run.process.wait(timeout=150)
    assert wait_until(
        lambda: re.search(r"clearflow: stopped in [\d.]+ s\n", run.output().replace("\r\n", "\n")), timeout=10
    )
    assert "stopped 1 pipeline job; it resumes on the next `make up`" in run.output()
    assert not _job_processes(stack)


def test_make_down_stops_the_stack_started_in_the_background_with_its_jobs(stack: Stack) -> None:
    if "pipeline_id" not in stack.state:
        pytest.skip("needs the pipeline the first test deployed")
    pipeline_id = stack.state["pipeline_id"]

    def make(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["make", "-s", *args], cwd=REPO_ROOT, env=stack.env, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip

    started = make("up", "DETACH=1", timeout=START_TIMEOUT)
    assert started.returncode == 0, started.stdout + started.stderr
    assert "ClearFlow is up" in started.stdout and "Stop: `make down`." in started.stdout
    pid = int(re.search(r"running in the background \(pid (\d+)", started.stdout).group(1))
    assert psutil.pid_exists(pid)

    # The deployed pipeline starts again: stop the stack as soon as its job exists.
    assert wait_until(
        lambda: stack.sql("SELECT count(*) FROM pipelines_pipelinerun WHERE ended_at IS NULL") == [(1,)], timeout=120
    )
    assert wait_until(lambda: bool(_job_processes(stack)), timeout=60)
    status = make("status")
    assert f"ClearFlow is running here (pid {pid}" in status.stdout, status.stdout
    for service in ("kafka", "clickhouse", "redis", "web", "worker", "beat"):
        assert re.search(rf"^\s+{service}\s+\d+\s+up\s", status.stdout, re.M), status.stdout
    # Deploying, or already running when a standby took it within seconds: either way its job is stopped below.
    assert re.search(r"owned-by-the-stack \(pipeline-\d+\)\s+(deploying|running)\s+job pid \d+", status.stdout), (
        status.stdout
    )

    down = make("down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert "clearflow: stopped 1 pipeline job; it resumes on the next `make up`" in down.stdout, down.stdout
    assert not _job_processes(stack) and not (psutil.pid_exists(pid) and _not_zombie(pid))
    outcomes = stack.sql("SELECT outcome FROM pipelines_pipelinerun WHERE pipeline_id = %s ORDER BY id", pipeline_id)
    assert outcomes[-1] == ("stack_stop",) and ("failed",) not in outcomes
    assert "ClearFlow is not running here" in make("status").stdout
    assert "ClearFlow is not running here" in make("down").stdout
