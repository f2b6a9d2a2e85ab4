"""RocksDB's compactions below the micro-batch's tasks in CPU priority (local mode, Linux).

Why: the dedup state's RocksDB compacts in a background thread of the JVM that also runs the micro-batch's
tasks (local mode: the executor is the driver's JVM). At the JVM's own priority a compaction of several seconds
takes a core from the tasks while it runs: in the 75-minute soak at 20,000 events/s the slowest micro-batches came
in runs of two or three, each at 40-76 µs a row against 22 for the others, and each run made the next batch
larger (docs/performance.md, "Steady state"). With its niceness raised by COMPACTION_NICE_INCREMENT, a
compaction takes the cycles the tasks leave (between batches, while the driver commits) and, when both want a
core, about a tenth of it (Linux's weights: 110 against 1024), so it still moves on and never stalls for good.
Flushes (RocksDB's high-priority pool) keep the JVM's priority: a flush that waits stops the writes.

A cluster's executors run elsewhere: there this does nothing (their hosts' RocksDB runs at its own priority).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# RocksDB names the threads of its low-priority pool (compactions) so; /proc shows a thread's first 15 characters.
COMPACTION_THREAD_NAME = "rocksdb:low"
COMPACTION_NICE_INCREMENT = 10


def lower_compaction_priority(jvm_pid: int, increment: int = COMPACTION_NICE_INCREMENT) -> int:
    """Sets each compaction thread of the JVM `jvm_pid` to the JVM's niceness plus `increment` (at most 19);
    the number of threads changed. A thread that ends meanwhile, or a /proc that does not exist, changes none."""
    try:
        target = min(19, os.getpriority(os.PRIO_PROCESS, jvm_pid) + increment)
        tasks = list(Path(f"/proc/{jvm_pid}/task").iterdir())
    except OSError:
        return 0
    changed = 0
    for task in tasks:
        try:
            if not (task / "comm").read_text().startswith(COMPACTION_THREAD_NAME):
                continue
            thread_id = int(task.name)
            if os.getpriority(os.PRIO_PROCESS, thread_id) != target:
                os.setpriority(os.PRIO_PROCESS, thread_id, target)
                changed += 1
        except (OSError, ValueError):
            continue
    if changed:
        log.info("RocksDB compaction threads of JVM %d: niceness +%d", jvm_pid, increment)
    return changed


def local_jvm_pid(spark: Any) -> int | None:
    """The pid of the session's JVM when its executor runs in it (a local master), else None."""
    try:
        if not str(spark.sparkContext.master).startswith("local"):
            return None
        return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # an odd gateway: the priority stays as it is
        return None
