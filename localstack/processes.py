"""Start real services as child processes, wait until they answer, and stop them all without leftovers.

Shared by `make up` (localstack.up) and the test suite (tests/conftest.py): one way to run a service. The stack's
services themselves (Kafka, the schema registry, ClickHouse, Redis, S3Proxy) are defined in
`localstack.service_defs`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ServiceDef:
    """How to run one service and how to tell that it is ready."""

    name: str
    argv: list[str]
    ready: Callable[[], bool]
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    ready_timeout: float = 60.0
    # Left running when a `ProcessGroup(end_with_parent=True)` dies: the next start finds and stops it.
    outlives_parent: bool = False


@dataclass
class RunningService:
    definition: ServiceDef
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def name(self) -> str:
        return self.definition.name

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""


class ServiceFailed(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_bindable(host: str, port: int) -> bool:
    """Whether a server could bind `host:port` now (no listener, no connection's local end holds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM does: TIME_WAIT does not count
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def tcp_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_holder(port: int) -> str | None:
    """The program listening on a TCP port, in words ("nc (pid 4242): nc -l 9092"); None when it cannot be
    read (another user's process: only root sees it)."""
    import psutil

    with contextlib.suppress(psutil.Error):
        for connection in psutil.net_connections(kind="tcp"):
            if connection.status == psutil.CONN_LISTEN and connection.laddr.port == port and connection.pid:
                process = psutil.Process(connection.pid)
                command = " ".join(process.cmdline())
                command = command if len(command) <= 120 else command[:117] + "..."
                return f"{process.name()} (pid {process.pid}): {command}"
    return None


def http_ok(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - local URLs only
            return 200 <= response.status < 300
    except OSError:
        return False


def wait_until(predicate: Callable[[], bool], *, timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that started it ends


def _end_with_parent(parent_pid: int) -> Callable[[], None]:
    """A preexec_fn that arms the parent-death signal (SIGTERM) in the child, before it runs its program.

    Linux sends it when the *thread* that forked the child ends, not the process: children that use it are
    started from the main thread only (`ProcessGroup.start`). libc is looked up here, in the parent: the child
    runs only the prctl call between fork and exec."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before the signal was armed: as if it came
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


class ProcessGroup:
    """Children started in their own sessions: Ctrl-C reaches only us, and we stop them in order.

    With `end_with_parent`, each child gets SIGTERM from the kernel when this process dies, however it dies
    (SIGKILL, the OOM killer): a service that cannot outlive its supervisor ends with it.
    """

    def __init__(self, log_dir: Path, *, end_with_parent: bool = False) -> None:
        self.log_dir = log_dir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.services: list[RunningService] = []
        self.end_with_parent = end_with_parent

    def start(
        self, definition: ServiceDef, *, spawned: Callable[[RunningService], None] | None = None
    ) -> RunningService:
        """Start a service and wait until it is ready; `spawned` is called as soon as its process exists (to
        record it before the wait, which a kill may cut short)."""
        log_path = self.log_dir / f"{definition.name}.log"
        env = {**os.environ, **definition.env}
        preexec = None
        if self.end_with_parent and not definition.outlives_parent:
            if threading.current_thread() is not threading.main_thread():
                raise RuntimeError("services that end with their parent are started from the main thread only")
            preexec = _end_with_parent(os.getpid())
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                definition.argv,
                cwd=definition.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=preexec,
            )
        service = RunningService(definition, process, log_path)
        self.services.append(service)
        if spawned is not None:
            spawned(service)
        deadline = time.monotonic() + definition.ready_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ServiceFailed(
                    f"{definition.name} exited with code {process.returncode} while starting; "
                    f"last lines of {log_path}:\n{service.log_tail()}"
                )
            if definition.ready():
                return service
            time.sleep(0.1)
        raise ServiceFailed(
            f"{definition.name} did not become ready within {definition.ready_timeout:.0f}s; "
            f"last lines of {log_path}:\n{service.log_tail()}"
        )

    def exited(self) -> list[RunningService]:
        return [service for service in self.services if service.process.poll() is not None]

    def stop(self, names: Collection[str], timeout: float = 20.0) -> list[str]:
        """Stop the children named, all at once, within `timeout` seconds (SIGTERM, then SIGKILL to the group);
        the names of those that had to be killed."""
        chosen = [service for service in reversed(self.services) if service.name in names]
        for service in chosen:
            if service.process.poll() is None:
                _signal_group(service.process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        killed = []
        for service in chosen:
            remaining = max(0.1, deadline - time.monotonic())
            try:
                service.process.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                killed.append(service.name)
                _signal_group(service.process, signal.SIGKILL)
                service.process.wait(timeout=5)
            _signal_group(service.process, signal.SIGKILL)
        self.services = [service for service in self.services if service not in chosen]
        return killed

    def stop_all(self, timeout: float = 20.0) -> list[str]:
        """Stop every child, newest first, within `timeout` seconds in total; the names of those killed."""
        return self.stop({service.name for service in self.services}, timeout=timeout)

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
