"""Who used the machine's cores over an interval, by component (benches run by hand; Linux /proc).

A latency spike in a soak is a micro-batch that waited: for its own work, or for a core something else held.
`CpuWatch.take()` answers the second: the cores each component used since the previous call, the job's JVM
split by its threads' names: RocksDB's background threads (compactions, flushes: they run beside the
micro-batch's tasks), the micro-batch's tasks, the JIT compilers, the garbage collector, and the rest (the driver:
planning, commits, listeners).

Components: the job's process tree (its JVM, and its Python driver and workers), ClickHouse, the Kafka broker,
this bench's own processes (the producer), the web app and worker, and everything else.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from bench_pipeline import _descendants

_TICK = os.sysconf("SC_CLK_TCK")
# A JVM's threads by the start of their names as /proc shows them (15 characters). RocksDB names its background
# pools' threads "rocksdb:low"/"rocksdb:high"; HotSpot its compilers "C1 CompilerThre", G1's threads "GC Thread#0",
# "G1 Conc#0", "G1 Refine#0", "G1 Service"; Spark its executor's "Executor task l".
JVM_THREAD_GROUPS = {
    "rocksdb": ("rocksdb:",),
    "tasks": ("Executor task",),
    "jit": ("C1 Compiler", "C2 Compiler"),
    "gc": ("GC Thread", "G1 "),
}
_KINDS = ("kafka.Kafka", "clickhouse", "celery", "manage.py", "gunicorn", "postgres", "redis-server")


def _own_seconds(stat_path: str) -> tuple[str, float]:
    """(the command name, user + system CPU seconds) of a process or thread, without its reaped children."""
    with open(stat_path) as f:
        text = f.read()
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text.rsplit(")", 1)[1].split()
    return name, (int(fields[11]) + int(fields[12])) / _TICK


def _component(pid: int, job: set[int], own: set[int]) -> str:
    if pid in job:
        return "job"
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        cmdline = ""
    for marker in _KINDS:  # the stack's services first: this bench may have started them
        if marker in cmdline:
            return {"kafka.Kafka": "kafka", "manage.py": "web", "gunicorn": "web", "celery": "worker"}.get(
                marker, marker.removesuffix("-server")
            )
    return "bench" if pid in own else "other"


class _Sample(NamedTuple):
    component: str
    seconds: float  # the process's own CPU seconds so far
    # A JVM's threads of JVM_THREAD_GROUPS: thread id -> (group, CPU seconds so far); empty for other processes.
    threads: dict[int, tuple[str, float]]
    java: bool


class CpuWatch:
    def __init__(self) -> None:
        self._dead: dict[int, str] = {}  # a process seen before keeps its component once its command line is gone
        # The baseline, per process: without it the first interval would count every process's CPU since it
        # started. Per process, not per component: the job's pid may be learnt after its processes were first
        # seen (as "other"), and a component's total would then jump by the job's whole life.
        self._last: dict[int, _Sample] = self.samples(None)
        self._last_at = time.monotonic()

    def samples(self, job_root: int | None) -> dict[int, _Sample]:
        """Each process alive now: its component, its CPU seconds so far, its RocksDB threads' (a JVM's)."""
        job = set(_descendants(job_root)) if job_root else set()
        own = set(_descendants(os.getpid()))
        samples: dict[int, _Sample] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            pid = int(entry)
            try:
                name, seconds = _own_seconds(f"/proc/{pid}/stat")
            except (OSError, ValueError):
                continue
            component = "job" if pid in job else self._dead.get(pid) or _component(pid, job, own)
            self._dead[pid] = component
            threads: dict[int, tuple[str, float]] = {}
            if name == "java":  # also before the job is known: the baseline of a job learnt late
                for task in Path(f"/proc/{pid}/task").iterdir():
                    try:
                        thread, used = _own_seconds(str(task / "stat"))
                    except (OSError, ValueError):
                        continue
                    group = next((g for g, starts in JVM_THREAD_GROUPS.items() if thread.startswith(starts)), None)
                    if group:
                        threads[int(task.name)] = (group, used)
            samples[pid] = _Sample(component, seconds, threads, name == "java")
        return samples

    def take(self, job_root: int | None) -> dict[str, float]:
        """Cores used by each component since the previous call (a process new since then counts from zero), plus
        'job.jvm' (the job's JVM) and 'job.<group>' for each of JVM_THREAD_GROUPS (its threads by name). A group
        adds up its threads' own intervals: Spark's task threads and HotSpot's compiler threads come and go, and a
        sum over the threads alive would drop when a busy one ends. A thread that ended in the interval is not in
        its group (its process's total still counts it)."""
        now, samples = time.monotonic(), self.samples(job_root)
        elapsed = max(1e-3, now - self._last_at)
        cores: dict[str, float] = defaultdict(float)
        for pid, sample in samples.items():
            before = self._last.get(pid)
            used = sample.seconds - (before.seconds if before else 0.0)
            cores[sample.component] += used / elapsed
            if sample.component == "job" and sample.java:
                cores["job.jvm"] += used / elapsed
                for tid, (group, seconds) in sample.threads.items():
                    earlier = before.threads.get(tid) if before else None
                    since = seconds - earlier[1] if earlier and earlier[0] == group else seconds  # new: from zero
                    cores[f"job.{group}"] += max(0.0, since) / elapsed
        self._last, self._last_at = samples, now
        return {name: round(max(0.0, value), 2) for name, value in sorted(cores.items(), key=lambda item: -item[1])}


def cores_in_words(cores: dict[str, float]) -> str:
    """'job 1.21 (jvm 0.98: rocksdb 0.20, tasks 0.60, jit 0.05, gc 0.04), clickhouse 0.31, ...': the components
    over 0.01 core."""
    job = cores.get("job", 0.0)
    groups = ", ".join(f"{group} {cores.get(f'job.{group}', 0.0):.2f}" for group in JVM_THREAD_GROUPS)
    parts = [f"job {job:.2f} (jvm {cores.get('job.jvm', 0.0):.2f}: {groups})"]
    others = {name: value for name, value in cores.items() if "." not in name and name != "job"}
    parts += [f"{name} {value:.2f}" for name, value in others.items() if value > 0.01]
    return ", ".join(parts)
