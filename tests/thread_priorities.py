"""The CPU priority (nice value) of a process's threads, as Linux reports them: what a test checks when the
product lowers the priority of background work."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def thread_nice_values(pid: int) -> set[tuple[str, int]]:
    """(name, nice) of each thread of process `pid` (/proc/<pid>/task/<tid>/stat: the name in parentheses,
    the nice value the 19th field)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        found.add((name, int(stat[stat.rindex(")") + 2 :].split()[16])))
    return found


def can_renice_threads() -> bool:
    """Whether servers started here may lower their threads' priority (ClickHouse needs CAP_SYS_NICE for it)."""
    return os.geteuid() == 0


@contextmanager
def thread_nice_values_while(pid: int, *, interval: float = 0.005) -> Iterator[set[tuple[str, int]]]:
    """Every (name, nice) that a thread of process `pid` showed while the `with` block ran, read every `interval`
    seconds in a thread of its own (the set fills as the block runs; read it after the block)."""
    seen: set[tuple[str, int]] = set()
    running = threading.Event()
    running.set()

    def watch() -> None:
        while running.is_set():
            seen.update(thread_nice_values(pid))
            time.sleep(interval)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        yield seen
    finally:
        running.clear()
        watcher.join()
