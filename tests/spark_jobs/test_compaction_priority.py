"""RocksDB's compaction threads are lowered in CPU priority, and only they (spark_jobs.compaction_priority)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_jobs.compaction_priority import COMPACTION_NICE_INCREMENT, lower_compaction_priority

# A process with threads named as RocksDB's background pools name theirs (a thread may rename itself through
# /proc), standing in for the JVM: the function reads names and sets priorities through /proc, as for Spark's.
_THREADS = """
import os, sys, threading, time
def named(name):
    (open(f"/proc/self/task/{threading.get_native_id()}/comm", "w")).write(name)
    time.sleep(60)
for name in ("rocksdb:low", "rocksdb:high", "Executor task l"):
    threading.Thread(target=named, args=(name,), daemon=True).start()
print("ready", flush=True)
time.sleep(60)
"""

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="Linux /proc")


def _niceness_by_thread_name(pid: int) -> dict[str, int]:
    result = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        name = (task / "comm").read_text().strip()
        result[name] = os.getpriority(os.PRIO_PROCESS, int(task.name))
    return result


def test_only_the_compaction_threads_are_lowered():
    child = subprocess.Popen([sys.executable, "-c", _THREADS], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while "rocksdb:low" not in _niceness_by_thread_name(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        base = os.getpriority(os.PRIO_PROCESS, child.pid)
        if base >= 19:
            pytest.skip("the test runs at the lowest priority already: there is nothing to lower")

        assert lower_compaction_priority(child.pid) == 1
        after = _niceness_by_thread_name(child.pid)
        assert after["rocksdb:low"] == min(19, base + COMPACTION_NICE_INCREMENT)
        assert after["rocksdb:high"] == base  # flushes keep the JVM's priority: a late flush stops the writes
        assert after["Executor task l"] == base
        assert lower_compaction_priority(child.pid) == 0  # already lowered: nothing to change
    finally:
        child.kill()
        child.wait()


def test_a_process_that_is_gone_changes_nothing():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert lower_compaction_priority(child.pid) == 0
