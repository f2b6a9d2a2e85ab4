"""What a running local stack keeps in `var/run/`, read by `make status` and `make down` in another shell.

- `up.lock`: held (flock) by the `make up` process while it runs, holding its pid;
- `stack.json`: what it started (pid, start time from /proc, command, address and log of each service), rewritten
  as each one starts; left behind by a stack that did not stop, it tells the next one what to stop (`leftovers`);
- `last-stop.json`: how it last stopped (how many pipeline jobs it stopped, and the words it said).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any

LOCK_NAME = "up.lock"
STACK_NAME = "stack.json"
LAST_STOP_NAME = "last-stop.json"


def run_dir(var_dir: Path) -> Path:
    return var_dir / "run"


def running_pid(var_dir: Path) -> int | None:
    """The pid of the `make up` that holds this var directory's lock, None when none runs."""
    lock_path = run_dir(var_dir) / LOCK_NAME
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        # A shared lock is refused while `make up` holds its exclusive one; granted, nobody runs.
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        text = os.read(fd, 64).decode().strip()
        return int(text) if text.isdigit() else -1
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_stack(var_dir: Path, data: dict[str, Any]) -> None:
    _write_json(run_dir(var_dir) / STACK_NAME, data)


def read_stack(var_dir: Path) -> dict[str, Any] | None:
    return _read_json(run_dir(var_dir) / STACK_NAME)


def remove_stack(var_dir: Path) -> None:
    with contextlib.suppress(OSError):
        (run_dir(var_dir) / STACK_NAME).unlink()


def write_last_stop(var_dir: Path, data: dict[str, Any]) -> None:
    _write_json(run_dir(var_dir) / LAST_STOP_NAME, data)


def read_last_stop(var_dir: Path) -> dict[str, Any] | None:
    return _read_json(run_dir(var_dir) / LAST_STOP_NAME)
