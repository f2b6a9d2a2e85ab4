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


def test_a_job_whose_pid_is_learnt_late_counts_only_the_interval(cpu_watch):
    # The job's processes exist before the bench knows their root (the watch's baseline saw them as "other"):
    # the first interval that names the job must count the CPU they used in it, not their whole life.
    spin = "import sys, time\nwhile time.process_time() < {}: pass\nprint('spun', flush=True)\nsys.stdin.readline()\n"
    child = subprocess.Popen(
        [sys.executable, "-c", spin.format(1.0) + spin.format(1.2)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "spun"  # 1.0 s used before the watch starts
        watch = cpu_watch.CpuWatch()
        started = time.monotonic()
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "spun"  # 0.2 s more, within the interval
        elapsed = time.monotonic() - started
        cores = watch.take(child.pid)
    finally:
        child.kill()
        child.wait()
    used = cores.get("job", 0) * elapsed
    assert 0.1 < used < 0.6, cores  # about 0.2 CPU-seconds; the child's first second would make it 1.2


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
