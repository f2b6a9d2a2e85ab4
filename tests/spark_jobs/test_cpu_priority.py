"""CPU priorities inside a job (spark_jobs.cpu_priority): only RocksDB's compaction threads go below the JVM;
a standby that took a pipeline lowers its whole process tree."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_jobs.cpu_priority import COMPACTION_NICE_INCREMENT, lower_compaction_priority

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
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            name = (task / "comm").read_text().strip()
            result[name] = os.getpriority(os.PRIO_PROCESS, int(task.name))
    return result


def test_only_the_compaction_threads_are_lowered():
    child = subprocess.Popen([sys.executable, "-c", _THREADS], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        names = {"rocksdb:low", "rocksdb:high", "Executor task l"}
        while not names <= set(_niceness_by_thread_name(child.pid)) and time.monotonic() < deadline:
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


@pytest.mark.spark
def test_a_dedup_query_lowers_its_jvms_compaction_threads(
    spark, kafka_bootstrap, clickhouse_server, new_topic, tmp_path
):
    from engine_helpers import event, make_spec, produce, wait_for

    from clearflow_spec.spec import parse_spec
    from spark_jobs.cpu_priority import local_jvm_pid
    from spark_jobs.query import start_query, stop_query

    jvm_pid = local_jvm_pid(spark)
    assert jvm_pid is not None
    base = os.getpriority(os.PRIO_PROCESS, jvm_pid)
    if base >= 19:
        pytest.skip("the test runs at the lowest priority already: there is nothing to lower")
    topic = new_topic(2)
    spec = parse_spec(
        make_spec(
            kafka_bootstrap=kafka_bootstrap,
            clickhouse=clickhouse_server,
            topics=[topic],
            dedup={"keys": ["event_id"], "window": "1h"},
        )
    )
    produce(kafka_bootstrap, topic, [(0, event("a", n=1)), (1, event("b", n=2))])
    query = start_query(spark, spec, checkpoint=str(tmp_path / "ckpt"), trigger={"processingTime": "1 second"})
    try:
        # RocksDB starts its compaction thread with the first state store; the query lowers it within seconds.
        wait_for(
            lambda: _niceness_by_thread_name(jvm_pid).get("rocksdb:low") == min(19, base + COMPACTION_NICE_INCREMENT),
            timeout=60,
        )
        assert _niceness_by_thread_name(jvm_pid).get("rocksdb:high") == base
    finally:
        stop_query(spark, query)


_TREE = """
import os, subprocess, sys, time
from spark_jobs.cpu_priority import lower_process_tree
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, lower_process_tree(int(sys.argv[1])), flush=True)
time.sleep(60)
"""


def test_a_job_lowers_its_own_threads_and_the_processes_it_started():
    base = os.getpriority(os.PRIO_PROCESS, 0)
    if base >= 17:
        pytest.skip("the test runs at the lowest priority already: there is nothing to lower")
    job = subprocess.Popen([sys.executable, "-c", _TREE, str(base + 2)], stdout=subprocess.PIPE, text=True)
    try:
        assert job.stdout is not None
        started, changed = (int(word) for word in job.stdout.readline().split())
        assert changed >= 2  # at least the job's main thread and its child's
        for pid in (job.pid, started):
            assert os.getpriority(os.PRIO_PROCESS, pid) == base + 2
        assert os.getpriority(os.PRIO_PROCESS, 0) == base  # the caller's own priority is its own
    finally:
        job.kill()
        job.wait()


_IDLE_TREE = """
import subprocess, sys, threading, time
from spark_jobs.cpu_priority import idle_process_tree
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, idle_process_tree(), flush=True)
later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # started once idle
print(later.pid, flush=True)
time.sleep(60)
"""


def _policies(pid: int) -> set[int]:
    policies = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            policies.add(os.sched_getscheduler(int(task.name)))
    return policies


def test_a_light_job_moves_its_threads_and_processes_to_the_idle_class():
    job = subprocess.Popen([sys.executable, "-c", _IDLE_TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert job.stdout is not None
        started, moved = (int(word) for word in job.stdout.readline().split())
        later = int(job.stdout.readline())
        assert moved >= 3  # the job's two threads and its child's
        for pid in (job.pid, started, later):  # what it starts afterwards inherits the class
            assert _policies(pid) == {os.SCHED_IDLE}, pid
        # The caller (the job's supervisor; here the test) keeps its own class.
        assert os.sched_getscheduler(0) != os.SCHED_IDLE
    finally:
        job.kill()
        job.wait()


def test_a_light_job_that_falls_behind_leaves_the_idle_class_whole_children_included():
    from spark_jobs.cpu_priority import leave_idle_class

    # A supervisor standing in for the job's wrapper, with a child standing in for its JVM, both in SCHED_IDLE as
    # a light job's processes are after their first micro-batch.
    child_code = "import os, time; os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)); time.sleep(60)"
    parent_code = (
        "import os, subprocess, sys, time; os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)); "
        f"subprocess.Popen([sys.executable, '-c', {child_code!r}]); print('ready', flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "ready"
        import psutil

        deadline = time.monotonic() + 10
        while not psutil.Process(parent.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)
        [child] = psutil.Process(parent.pid).children()
        while os.sched_getscheduler(child.pid) != os.SCHED_IDLE and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.sched_getscheduler(child.pid) == os.SCHED_IDLE
        assert leave_idle_class(parent.pid) >= 2
        assert os.sched_getscheduler(parent.pid) == os.SCHED_OTHER
        assert os.sched_getscheduler(child.pid) == os.SCHED_OTHER
    finally:
        for process in psutil.Process(parent.pid).children():
            process.kill()
        parent.kill()
        parent.wait()
