"""A PostgreSQL cluster of a test's own (initdb + pg_ctl on a free port, in a temporary directory), for tests that
stop and start PostgreSQL: the shared server on 127.0.0.1:5432 serves every other test and session. As root, the
cluster runs as the `postgres` user (PostgreSQL refuses to run as root)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from localstack.processes import free_port


def _binary(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        raise RuntimeError(f"{name} is not installed (apt-get install -y postgresql)")
    return found


class ThrowawayPostgres:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="clearflow-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run(_binary("initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync")

    def _run(self, *argv: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_root else []
        subprocess.run([*prefix, *argv], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(_binary("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"), "-w", "start")

    def stop(self) -> None:
        self._run(_binary("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # not running
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def copy_schema(self, *, source_url: str, database: str) -> None:
        """Create `database` with the tables of the database at `source_url` (no rows)."""
        self._run(_binary("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", database)
        dump = subprocess.run(
            [_binary("pg_dump"), "--schema-only", "--no-owner", "--no-privileges", source_url],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        subprocess.run(
            [_binary("psql"), "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
             "-d", database],
            input=dump.stdout, check=True, capture_output=True, timeout=120,
        )  # fmt: skip
