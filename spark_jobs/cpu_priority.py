"""CPU priorities inside a job (Linux): a thread's niceness only ever goes up here (lower priority), never down.

1. A standby job (spark_jobs.standby) runs its pipeline's first micro-batch at the worker's priority, then lowers
   every thread of its processes to the niceness of a job started cold (`lower_process_tree`, from spark_jobs.run).
   A light pipeline's job (clearflow_spec.sizing.is_light), however it started, then moves to Linux's idle scheduling
   class (`idle_process_tree`): "Why the idle class" below.
2. RocksDB's compactions run below the micro-batch's tasks (`lower_compaction_priority`, local mode).

Why 2: the dedup state's RocksDB compacts in a background thread of the JVM that also runs the micro-batch's
tasks (local mode: the executor is the driver's JVM). At the JVM's own priority a compaction of several seconds
takes a core from the tasks while it runs: in the 75-minute soak at 20,000 events/s the slowest micro-batches came
in runs of two or three, each at 40-76 µs a row against 22 for the others, and each run made the next batch
larger (docs/performance-log.md, "Steady state"). With its niceness raised by COMPACTION_NICE_INCREMENT, a
compaction takes the cycles the tasks leave (between batches, while the driver commits) and, when both want a
core, about a tenth of it (Linux's weights: 110 against 1024; 15 against 110 in a job at niceness 10, the
worker's default), so it still moves on and never stalls for good.
Flushes (RocksDB's high-priority pool) keep the JVM's priority: a flush that waits stops the writes.

Why the idle class: a niceness is a weight per thread (1024 at 0, 110 at 10), and twenty light
jobs catching up have dozens of runnable threads between them. With them at niceness 10, a new deploy's first
micro-batch in a standby (at the worker's niceness) got about a third of a core: 14 s of first batch where a
quiet machine takes 3 (docs/performance-log.md, "Many pipelines on one machine"). A thread in SCHED_IDLE weighs 3
whatever its niceness, so everything else on the host goes first: the web app, the worker, the broker and
ClickHouse the jobs write to, a busy pipeline's job, and a new deploy's first batch. Light jobs share what is left
among themselves, and alone on a host still take every idle core. The price: while a busy pipeline's job holds
every core, light pipelines wait behind it (their lag shows it). A busy job keeps its niceness, so that its
compaction threads can still go below its tasks (2: the idle class has no levels).

A cluster's executors run elsewhere: there this does nothing (their hosts' RocksDB runs at its own priority).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# RocksDB names the threads of its low-priority pool (compactions) so; /proc shows a thread's first 15 characters.
COMPACTION_THREAD_NAME = "rocksdb:low"
COMPACTION_NICE_INCREMENT = 10


def lower_threads(thread_ids: Iterable[int], niceness: int) -> int:
    """Sets each thread in `thread_ids` whose niceness is below `niceness` to it; the number changed. A thread that
    ends meanwhile changes nothing."""
    changed = 0
    for thread_id in thread_ids:
        with contextlib.suppress(OSError):
            if os.getpriority(os.PRIO_PROCESS, thread_id) < niceness:
                os.setpriority(os.PRIO_PROCESS, thread_id, niceness)
                changed += 1
    return changed


def lower_process_tree(niceness: int) -> int:
    """Lowers every thread of this process and of the processes it started (the JVM, Spark's Python workers) to
    `niceness`; threads and processes started later inherit it. The number of threads changed."""
    return lower_threads(_process_tree_threads(), niceness)


def idle_threads(thread_ids: Iterable[int]) -> int:
    """Moves each thread in `thread_ids` to the idle scheduling class (SCHED_IDLE); the number moved. A thread that
    ends meanwhile, or already idle, changes nothing. Allowed without privileges for one's own threads."""
    changed = 0
    for thread_id in thread_ids:
        with contextlib.suppress(OSError):
            if os.sched_getscheduler(thread_id) != os.SCHED_IDLE:
                os.sched_setscheduler(thread_id, os.SCHED_IDLE, os.sched_param(0))
                changed += 1
    return changed


def _process_tree_threads() -> list[int]:
    """The threads of this process and of every process it started, by thread id."""
    import psutil

    me = psutil.Process()
    thread_ids: list[int] = []
    for process in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error, OSError):  # a process that ended meanwhile
            thread_ids.extend(thread.id for thread in process.threads())
    return thread_ids


def idle_process_tree() -> int:
    """Moves every thread of this process and of the processes it started (the JVM, Spark's Python daemon and
    workers) to the idle scheduling class; threads and processes they start later are idle too. The number of
    threads moved (0 where the platform has no SCHED_IDLE)."""
    if not hasattr(os, "SCHED_IDLE"):
        return 0
    return idle_threads(_process_tree_threads())


def leave_idle_class(pid: int) -> int:
    """Moves every thread of the process `pid` and of the processes it started out of the idle scheduling class
    (back to SCHED_OTHER, at the niceness each had): a light job whose lag grows is no longer light, and is never
    starved while it waits to be re-sized (the worker calls it, for a job on its host). The number moved."""
    import psutil

    if not hasattr(os, "SCHED_IDLE"):
        return 0
    moved = 0
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for process in processes:
        with contextlib.suppress(psutil.Error, OSError):
            for thread in process.threads():
                with contextlib.suppress(OSError):
                    if os.sched_getscheduler(thread.id) == os.SCHED_IDLE:
                        os.sched_setscheduler(thread.id, os.SCHED_OTHER, os.sched_param(0))
                        moved += 1
    return moved


def lower_compaction_priority(jvm_pid: int, increment: int = COMPACTION_NICE_INCREMENT) -> int:
    """Sets each compaction thread of the JVM `jvm_pid` to the JVM's niceness plus `increment` (at most 19);
    the number of threads changed. A thread that ends meanwhile, or a /proc that does not exist, changes none."""
    try:
        target = min(19, os.getpriority(os.PRIO_PROCESS, jvm_pid) + increment)
        tasks = list(Path(f"/proc/{jvm_pid}/task").iterdir())
    except OSError:
        return 0
    compaction_threads = []
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):  # a thread that ended meanwhile
            if (task / "comm").read_text().startswith(COMPACTION_THREAD_NAME):
                compaction_threads.append(int(task.name))
    changed = lower_threads(compaction_threads, target)
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


def lower_after_first_batch(query: object, niceness: int | None, idle: bool, stop_requested: threading.Event) -> None:
    """Once the query's first micro-batch is done, lower this job's processes to `niceness` (None: as they are):
    a standby ran its first batch at the worker's priority, and runs from now on where a job started cold runs.
    RocksDB's compaction threads then follow the JVM's niceness (lower_compaction_priority, at each heartbeat).
    With `idle` (a light pipeline), then move them to the idle scheduling class, so that everything else on the
    host, a new deploy's first batch included, goes first (the module's docstring says why)."""
    while getattr(query, "lastProgress", None) is None:
        if stop_requested.wait(0.5) or not query.isActive:  # type: ignore[attr-defined]
            return
    if niceness is not None:
        lower_process_tree(niceness)
        log.info("after its first micro-batch: CPU priority lowered to niceness %d", niceness)
    if idle:
        moved = idle_process_tree()
        # Again a moment later: a thread started meanwhile by one not yet moved would have kept the old class.
        if stop_requested.wait(2.0):
            return
        moved += idle_process_tree()
        log.info("after its first micro-batch: %d threads in the idle CPU class (a light pipeline)", moved)
