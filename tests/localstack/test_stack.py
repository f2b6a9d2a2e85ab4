"""`make up` as a user runs it: the stack comes up healthy, names what is down, and leaves nothing behind.

The stack runs as `python -m localstack up` (what `make up` calls) with every address moved to a free port
and its state in a temporary directory, so it can run beside a developer's own stack.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from localstack.processes import ProcessGroup, ServiceDef, tcp_open, wait_until
from localstack.stack_config import StackConfig
from localstack.stack_services import service_definitions
from tests.localstack.stack_env import stack_env

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Stack:
    process: subprocess.Popen[str]
    env: dict[str, str]
    ports: dict[str, int]
    output_path: Path
    launched_at: float  # time.time() when the test ran `python -m localstack up`
    up_at: float = 0.0  # when the banner appeared

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['web']}"

    def output(self) -> str:
        return self.output_path.read_text()

    def child_pids(self) -> dict[str, int]:
        return {name: int(pid) for name, pid in re.findall(r"clearflow: ([\w-]+) is up \(pid (\d+)", self.output())}

    def health(self) -> tuple[int, dict[str, object]]:
        try:
            with urllib.request.urlopen(f"{self.base_url}/api/v1/health", timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie waiting for its parent to reap it is gone for our purposes.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ")[-1][0] != "Z"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    var_dir = tmp_path_factory.mktemp("stack-var")
    made = stack_env(var_dir, database_prefix="clearflow_stack")
    env, ports, database = made.env, made.ports, made.database
    env["CLEARFLOW_STANDBY"] = "2"  # a pool, as on a person's machine, that the banner waits for
    # As the Makefile exports it: `make up` began 30 s before (installing), so the banner counts those too.
    launched_at = time.time()
    env["CLEARFLOW_UP_STARTED_AT"] = f"{launched_at - 30:.3f}"
    output_path = var_dir / "up-output.log"
    with open(output_path, "w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "localstack", "up"],
            cwd="/",  # it must not depend on the working directory
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
        )
    stack = Stack(process, env, ports, output_path, launched_at)
    try:
        # The schema registry (Quarkus) takes 25-60 s of the start on two busy cores, the standby pool up to 90 more.
        assert wait_until(lambda: "ClearFlow is up" in stack.output() or process.poll() is not None, timeout=300), (
            stack.output()
        )
        stack.up_at = time.time()
        assert process.poll() is None, stack.output()
        yield stack
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        with psycopg.connect("postgres://clearflow@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def test_make_up_starts_every_component_healthy_and_prints_the_login(stack: Stack) -> None:
    assert wait_until(lambda: stack.health()[0] == 200, timeout=30), stack.health()
    status, body = stack.health()
    assert status == 200
    assert body["status"] == "ok"
    assert set(body["components"]) == {"database", "redis", "celery", "pipelines", "kafka", "clickhouse", "spark"}
    assert all(component["ok"] for component in body["components"].values())
    password = (Path(stack.env["CLEARFLOW_VAR_DIR"]) / "secrets" / "admin_password").read_text().strip()
    # The output goes to a pipe here, as `make up DETACH=1` sends it to var/log/up.log: the password stays in
    # var/secrets/ (0600), and the banner says where.
    assert password not in stack.output()
    assert "Log in      admin / the password in " in stack.output()
    assert f"Open        {stack.base_url}/" in stack.output()
    with urllib.request.urlopen(f"{stack.base_url}/health", timeout=10) as page:
        assert "All components are up." in page.read().decode()


def test_make_up_starts_the_first_standby_job_before_its_worker(stack: Stack) -> None:
    # A deploy right after the banner finds a job's JVM and Spark session up (or nearly): `make up` starts the
    # first standby as soon as Redis answers, beside the other services, not at the watcher's first tick.
    import psutil

    from worker import standby

    run_root = Path(stack.env["CLEARFLOW_VAR_DIR"]) / "runs"
    assert wait_until(lambda: bool(standby.waiting(run_root)), timeout=60), stack.output()
    first = min(standby.waiting(run_root), key=lambda found: found.handle.process_started)
    assert first.handle.process_started < psutil.Process(stack.child_pids()["worker"]).create_time()
    assert first.niceness == 0  # nothing to give way to: the next deploy's first batch runs at the worker's priority


def test_the_banner_comes_once_the_pool_of_standby_jobs_is_ready(stack: Stack) -> None:
    # A person deploys right after the banner, often several pipelines one after the other: each should find a
    # job's JVM and Spark session up. The banner says how many are ready.
    from worker import standby

    run_root = Path(stack.env["CLEARFLOW_VAR_DIR"]) / "runs"
    match = re.search(r"Jobs        (\d+) standby jobs ready: a deploy starts in a JVM that is up", stack.output())
    assert match, stack.output()
    assert match.group(1) == "2"
    # Ready when the banner came: none was started after it.
    ready = [found for found in standby.waiting(run_root) if found.ready]
    assert len(ready) == 2
    assert all(found.handle.process_started < stack.up_at for found in ready)


def test_the_banner_counts_from_the_start_of_make_up(stack: Stack) -> None:
    match = re.search(r"ClearFlow is up, (\d+) s after `make up` started\.", stack.output())
    assert match, stack.output()
    # 30 s of "installing" before the launch, plus everything up to the banner (migrations included).
    took = 30 + (stack.up_at - stack.launched_at)
    assert took - 2 <= int(match.group(1)) <= took + 1


def test_make_up_exports_its_start_time(tmp_path: Path) -> None:
    """The Makefile stamps the start before installing; `python -m localstack up` reads the stamp."""
    fake_python = tmp_path / "python"
    fake_python.write_text('#!/bin/sh\necho "started at $CLEARFLOW_UP_STARTED_AT"\n')
    fake_python.chmod(0o755)
    before = time.time()
    result = subprocess.run(
        ["make", "-s", "-C", str(REPO_ROOT), "up", f"PY={fake_python}", "-o", "install", "-o", "system-deps"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    started = float(result.stdout.strip().removeprefix("started at "))
    assert before - 1 <= started <= time.time()


def test_make_up_serves_a_schema_registry_with_the_confluent_api(stack: Stack) -> None:
    registry = stack.env["SCHEMA_REGISTRY_URL"]
    assert f"Schemas     {registry}" in stack.output()
    schema = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
    body = {"schema": json.dumps(schema)}
    registered = _registry_call(registry, "POST", "/subjects/stack-orders-value/versions", body)
    assert json.loads(_registry_call(registry, "GET", f"/schemas/ids/{registered['id']}")["schema"]) == schema
    assert _registry_call(registry, "GET", "/subjects/stack-orders-value/versions") == [1]


def _registry_call(base_url: str, method: str, path: str, body: object | None = None) -> Any:
    request = urllib.request.Request(
        base_url + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_health_names_the_component_that_is_down(stack: Stack) -> None:
    os.kill(stack.child_pids()["kafka"], signal.SIGKILL)
    assert wait_until(lambda: not tcp_open("127.0.0.1", stack.ports["kafka"]), timeout=10)
    # The open health endpoint answers from a cache of a few seconds (so callers cannot tie up the workers).
    assert wait_until(lambda: stack.health()[0] == 503, timeout=20), stack.health()
    status, body = stack.health()
    assert status == 503
    assert body["status"] == "down"
    assert body["down"] == ["kafka"]
    assert body["components"]["kafka"]["ok"] is False
    assert str(stack.ports["kafka"]) not in json.dumps(body), "the open endpoint must not reveal addresses"
    assert wait_until(lambda: "kafka exited" in stack.output(), timeout=5), stack.output()


def test_a_second_make_up_says_one_is_already_running(stack: Stack) -> None:
    second = subprocess.run(
        [sys.executable, "-m", "localstack", "up"], env=stack.env, capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 1
    assert f"already running here (pid {stack.process.pid}" in second.stdout


def test_stopping_leaves_no_process_and_no_listener(stack: Stack) -> None:
    pids = stack.child_pids()
    assert set(pids) >= {"clickhouse", "redis", "web", "worker", "beat", "schema-registry"}
    started = time.monotonic()
    stack.process.send_signal(signal.SIGINT)  # what Ctrl-C sends
    stack.process.wait(timeout=30)
    assert time.monotonic() - started < 30
    assert stack.process.returncode == 0
    assert "clearflow: stopped" in stack.output()
    assert [name for name, pid in pids.items() if _pid_alive(pid)] == []
    assert [name for name, port in stack.ports.items() if tcp_open("127.0.0.1", port)] == []
    leftovers = subprocess.run(
        ["pgrep", "-f", stack.env["CLEARFLOW_VAR_DIR"]], capture_output=True, text=True
    ).stdout.split()
    assert leftovers == []


def _make_up_service(stack: Stack, name: str) -> ServiceDef:
    """A service exactly as `make up` defines it for this stack's environment (same var dir, same ports)."""
    with pytest.MonkeyPatch.context() as patch:
        for variable, value in stack.env.items():
            patch.setenv(variable, value)
        config = StackConfig.from_env()
        return next(definition for definition in service_definitions(config) if definition.name == name)


def _make_up_broker(stack: Stack) -> ServiceDef:
    return _make_up_service(stack, "kafka")


def _once_ready(ask: Callable[[], Any], timeout: float = 60) -> Any:
    """ask()'s answer, asked again while the broker is still electing leaders (its port opens before that)."""
    from confluent_kafka import KafkaError, KafkaException

    waiting = {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,  # until the restarted broker has replayed its metadata log
    }
    deadline = time.monotonic() + timeout
    while True:
        try:
            return ask()
        except KafkaException as exc:
            error = exc.args[0]
            if not (error.retriable() or error.code() in waiting) or time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def test_the_broker_keeps_topics_and_offsets_across_a_restart(stack: Stack, tmp_path: Path) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    if stack.process.poll() is None:  # run on its own: stop the stack first (its broker was killed already)
        stack.process.send_signal(signal.SIGINT)
        stack.process.wait(timeout=30)
    bootstrap = stack.env["KAFKA_BOOTSTRAP_SERVERS"]
    topic, group = "kept-orders", "kept-readers"

    with ProcessGroup(tmp_path / "first") as first:
        first.start(_make_up_broker(stack))
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(timeout=30)
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(20):
            producer.produce(topic, value=f"order-{i}".encode(), partition=i % 2)
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        _once_ready(lambda: consumer.commit(offsets=[TopicPartition(topic, 1, 7)], asynchronous=False))
        consumer.close()

    with ProcessGroup(tmp_path / "second") as second:
        second.start(_make_up_broker(stack))
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            ends = _once_ready(
                lambda: [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5) for p in (0, 1)]
            )
            assert ends == [(0, 10), (0, 10)]
            kept = _once_ready(lambda: consumer.committed([TopicPartition(topic, 1)], timeout=5))
            assert [(tp.partition, tp.offset) for tp in kept] == [(1, 7)]
        finally:
            consumer.close()


def test_a_missing_prerequisite_is_named_with_the_command_that_installs_it(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with Python but without Java
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(bin_dir), "CLEARFLOW_VAR_DIR": str(tmp_path / "var")}

    result = subprocess.run(
        [sys.executable, "-m", "localstack", "up"], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 1
    assert "missing prerequisites" in result.stdout
    assert "Java 17 for Spark: apt-get install -y openjdk-17-jre-headless" in result.stdout


def test_the_schema_registry_keeps_schemas_and_ids_across_a_restart(stack: Stack, tmp_path: Path) -> None:
    """Records in Kafka carry schema ids: a restarted registry must still resolve them."""
    if stack.process.poll() is None:
        stack.process.send_signal(signal.SIGINT)
        stack.process.wait(timeout=30)
    registry = stack.env["SCHEMA_REGISTRY_URL"]
    schema = {"type": "record", "name": "Kept", "fields": [{"name": "n", "type": "long"}]}
    with ProcessGroup(tmp_path / "first") as first:
        first.start(_make_up_service(stack, "schema-registry"))
        body = {"schema": json.dumps(schema)}
        kept_id = _registry_call(registry, "POST", "/subjects/kept-value/versions", body)["id"]
    with ProcessGroup(tmp_path / "second") as second:
        second.start(_make_up_service(stack, "schema-registry"))
        assert json.loads(_registry_call(registry, "GET", f"/schemas/ids/{kept_id}")["schema"]) == schema
        assert "kept-value" in _registry_call(registry, "GET", "/subjects")
