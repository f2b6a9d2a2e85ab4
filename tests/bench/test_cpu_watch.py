"""bench/cpu_watch.py: the cores a soak's components used, told apart by process (Linux /proc)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

_BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def cpu_watch(monkeypatch):
    monkeypatch.syspath_prepend(str(_BENCH))  # bench/ is a folder of scripts: cpu_watch imports bench_pipeline
    import cpu_watch

    return cpu_watch


def test_a_busy_child_is_the_bench_and_a_clickhouse_process_is_clickhouse(cpu_watch):
    # Each child uses 0.2 s of CPU, says so, then waits: the interval holds that CPU whatever the machine's load.
    spin = "import sys, time\nwhile time.process_time() < 0.2: pass\nprint('spun', flush=True)\ntime.sleep(30)"
    watch = cpu_watch.CpuWatch()
    children = [
        subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE, text=True),
        subprocess.Popen(
            [sys.executable, "-c", spin, "localstack.clickhouse_server"], stdout=subprocess.PIPE, text=True
        ),
    ]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "spun"
        cores = watch.take(None)
    finally:
        for child in children:
            child.kill()
            child.wait()
    assert cores.get("bench", 0) > 0  # this test's own child: the bench's processes
    assert cores.get("clickhouse", 0) > 0  # told apart by its command line, though also this test's child
    assert cores.get("job", 0) == 0  # no job given


def cpu_seconds_of_the_second_step(cpu_watch, command: list[str]) -> dict[str, float]:
    """Run `command`, a child that prints 'spun' after each step and waits for a line of stdin before the next: its
    first step runs before the watch starts, its second within the watch's interval. The CPU-seconds of each of
    the watch's names (the child is the job) in that interval."""
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "spun"  # the first step, before the watch starts
        watch = cpu_watch.CpuWatch()
        started = time.monotonic()
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "spun"  # the second step, within the interval
        elapsed = time.monotonic() - started
        cores = watch.take(child.pid)
    finally:
        child.kill()
        child.wait()
    return {name: value * elapsed for name, value in cores.items()}


def test_a_job_whose_pid_is_learnt_late_counts_only_the_interval(cpu_watch):
    # The job's processes exist before the bench knows their root (the watch's baseline saw them as "other"):
    # the first interval that names the job must count the CPU they used in it, not their whole life.
    spin = "import sys, time\nwhile time.process_time() < {}: pass\nprint('spun', flush=True)\nsys.stdin.readline()\n"
    # 1.0 s used before the watch starts, 0.2 s more within the interval.
    used = cpu_seconds_of_the_second_step(cpu_watch, [sys.executable, "-c", spin.format(1.0) + spin.format(1.2)])
    assert 0.1 < used.get("job", 0) < 0.6, used  # about 0.2 CPU-seconds; the child's first second would make it 1.2


# A process /proc calls "java" whose task threads come and go, as Spark's executor pool's do. The first, named as
# Spark names its task threads, spins for 0.6 CPU seconds and waits; on a line of stdin it ends and a second one
# starts, spins for 0.2 s, and waits (alive) for the next line.
_TASK_THREADS = """
import ctypes, sys, threading, time
def task(seconds, done):
    ctypes.CDLL(None).prctl(15, b"Executor task l", 0, 0, 0)  # PR_SET_NAME: this thread's name in /proc
    started = time.thread_time()
    while time.thread_time() - started < seconds:
        pass
    print("spun", flush=True)
    done.wait()
first_done, second_done = threading.Event(), threading.Event()
first = threading.Thread(target=task, args=(0.6, first_done))
first.start()
sys.stdin.readline()
first_done.set()
first.join()
threading.Thread(target=task, args=(0.2, second_done), daemon=True).start()
sys.stdin.readline()
"""


def test_a_busy_task_thread_that_ends_does_not_hide_the_next_ones_cpu(cpu_watch, tmp_path):
    java = tmp_path / "java"
    java.symlink_to(sys.executable)
    # The first thread holds 0.6 s when the watch starts; within the interval it ends and the second uses 0.2 s.
    used = cpu_seconds_of_the_second_step(cpu_watch, [str(java), "-c", _TASK_THREADS])
    # The second thread's 0.2 s; a sum over the live threads (0.2 now, 0.6 before) would say none.
    assert 0.1 < used.get("job.tasks", 0) < 0.5, used


@pytest.mark.fast  # needs no service: `make test-fast`
def test_the_words_name_the_job_its_jvm_threads_and_the_busy_others(cpu_watch):
    words = cpu_watch.cores_in_words(
        {
            "job": 1.41,
            "job.jvm": 1.2,
            "job.rocksdb": 0.25,
            "job.tasks": 0.7,
            "job.jit": 0.1,
            "clickhouse": 0.3,
            "kafka": 0.005,
            "bench": 0.12,
        }
    )
    assert words == "job 1.41 (jvm 1.20: rocksdb 0.25, tasks 0.70, jit 0.10, gc 0.00), clickhouse 0.30, bench 0.12"
