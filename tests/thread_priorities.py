"""The CPU priority (nice value) of a process's threads, as Linux reports them: what a test checks when the
product lowers the priority of background work."""

from __future__ import annotations

import os
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
