"""`localstack/system-deps.sh` (what `make up` and `make test` run first) on a machine where it cannot install:
it stops at once and names the exact commands, instead of waiting for an answer."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# What the script needs besides what it installs; Redis and sudo are left out on purpose.
TOOLS = ("id", "java", "mvn", "pg_isready", "psql", "ls", "sort", "tail", "seq", "sleep", "grep", "env")


@pytest.fixture
def machine_without_redis():
    """A PATH with the tools the script uses but no redis-server and no sudo, readable by an unprivileged user."""
    root = Path(tempfile.mkdtemp(prefix="clearflow-deps-"))
    root.chmod(0o755)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    script = root / "system-deps.sh"
    shutil.copy(REPO_ROOT / "localstack" / "system-deps.sh", script)
    script.chmod(0o644)
    yield bin_dir, script
    shutil.rmtree(root)


def test_without_root_a_missing_package_is_named_with_its_command_at_once(machine_without_redis):
    bin_dir, script = machine_without_redis
    command = ["/bin/bash", str(script), "up"]
    if os.geteuid() == 0:  # as root it would install: run it as a user who cannot
        command = [shutil.which("runuser") or "runuser", "-u", "nobody", "--", "env", f"PATH={bin_dir}", *command]
    env = {"PATH": str(bin_dir), "DATABASE_URL": "postgres://clearflow@db.example.invalid:5432/clearflow"}

    started = time.monotonic()
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

    assert time.monotonic() - started < 10
    assert result.returncode == 1
    assert "clearflow: missing prerequisites; install them with:" in result.stderr
    assert "  sudo apt-get install -y --no-install-recommends redis-server\n" in result.stderr
    assert "sudo bash localstack/system-deps.sh up" in result.stderr
