"""What `make up` does before it starts a service: take the var directory's lock, check the prerequisites, refuse
a port another program holds, create the database, migrate. A problem the user can fix is a `StackError`."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from localstack import processes
from localstack.stack_config import LOCAL_HOSTS, REPO_ROOT, StackConfig


class StackError(RuntimeError):
    """A problem the user can fix; its message says how."""


def _say(message: str) -> None:
    print(f"clearflow: {message}", flush=True)


def acquire_lock(var_dir: Path) -> int:
    """One `make up` per var/ directory; a second one says who holds it."""
    run_dir = var_dir / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    lock_path = run_dir / "up.lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 64).decode().strip() or "unknown"
        os.close(fd)
        raise StackError(
            f"ClearFlow is already running here (pid {holder}, lock {lock_path}). "
            f"Use that one, or stop it with Ctrl-C in its terminal or `kill {holder}`."
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def check_prerequisites(config: StackConfig) -> None:
    missing = []
    if shutil.which("java") is None:
        missing.append("Java 17 for Spark: apt-get install -y openjdk-17-jre-headless")
    needs_redis_server = config.redis_host in LOCAL_HOSTS and not processes.tcp_open(
        config.redis_host, config.redis_port
    )
    if needs_redis_server and shutil.which("redis-server") is None:
        missing.append("Redis: apt-get install -y redis-server (or set REDIS_URL to a running Redis)")
    if missing:
        raise StackError("missing prerequisites:\n  - " + "\n  - ".join(missing))


def ensure_port_free(name: str, host: str, port: int, variable: str) -> None:
    """Refuse a port another program listens on, naming it (the stack's own leftovers are stopped before)."""
    if processes.tcp_open(host, port):
        holder = processes.port_holder(port)
        raise StackError(
            f"port {port} for {name} is already in use by another program ({holder or 'of another user'}). "
            f"Stop it, or choose another address with {variable}."
        )


def ensure_database(database_url: str) -> None:
    """Create the PostgreSQL database if the server answers and the database is missing."""
    import psycopg

    parts = urlsplit(database_url)
    if parts.scheme not in {"postgres", "postgresql"}:
        return
    name = parts.path.lstrip("/")
    admin_url = parts._replace(path="/postgres").geturl()
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if not exists:
                conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(name)))
                _say(f"created PostgreSQL database {name}")
    except psycopg.OperationalError as error:
        hint = (
            "start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"
            if shutil.which("pg_ctlcluster")
            else "install it with: apt-get install -y postgresql (or set DATABASE_URL)"
        )
        raise StackError(f"PostgreSQL does not answer ({error.args[0].strip()}); {hint}") from None


def manage(*args: str, log_path: Path) -> None:
    with open(log_path, "ab") as log:
        result = subprocess.run(
            [sys.executable, str(REPO_ROOT / "manage.py"), *args],
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if result.returncode != 0:
        raise StackError(f"manage.py {' '.join(args)} failed; see {log_path}")
