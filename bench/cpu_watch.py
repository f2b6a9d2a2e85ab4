"""Who used the machine's cores over an interval, by component (benches run by hand; Linux /proc).

A latency spike in a soak is a micro-batch that waited: for its own work, or for a core something else held.
`CpuWatch.take()` answers the second: the cores each component used since the previous call, the job's JVM
split into RocksDB's background threads (compactions, flushes: they run beside the micro-batch's tasks, at the
JVM's priority) and the rest.

Components: the job's process tree (its JVM, and its Python driver and workers), ClickHouse, the Kafka broker,
this bench's own processes (the producer), the web app and worker, and everything else.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path

from bench_pipeline import _descendants

_TICK = os.sysconf("SC_CLK_TCK")
# A JVM thread's name as /proc shows it (15 characters): RocksDB names its background pools' threads so.
_ROCKSDB_THREAD_PREFIX = "rocksdb:"
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


class CpuWatch:
    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._last_at = time.monotonic()
        self._dead: dict[int, str] = {}  # a process seen before keeps its component once its command line is gone

    def totals(self, job_root: int | None) -> dict[str, float]:
        """CPU seconds so far by component, for the processes alive now (plus 'job.rocksdb': the JVM's RocksDB
        threads, and 'job.jvm': the whole JVM)."""
        job = set(_descendants(job_root)) if job_root else set()
        own = set(_descendants(os.getpid()))
        totals: dict[str, float] = defaultdict(float)
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            pid = int(entry)
            try:
                name, seconds = _own_seconds(f"/proc/{pid}/stat")
            except (OSError, ValueError):
                continue
            component = self._dead.get(pid) or _component(pid, job, own)
            self._dead[pid] = component
            totals[component] += seconds
            if component == "job" and name == "java":
                totals["job.jvm"] += seconds
                for task in Path(f"/proc/{pid}/task").iterdir():
                    try:
                        thread, used = _own_seconds(str(task / "stat"))
                    except (OSError, ValueError):
                        continue
                    if thread.startswith(_ROCKSDB_THREAD_PREFIX):
                        totals["job.rocksdb"] += used
        return totals

    def take(self, job_root: int | None) -> dict[str, float]:
        """Cores used by each component since the previous call (components that went away count from zero)."""
        now, totals = time.monotonic(), self.totals(job_root)
        elapsed = max(1e-3, now - self._last_at)
        cores = {name: max(0.0, (value - self._last.get(name, 0.0)) / elapsed) for name, value in totals.items()}
        self._last, self._last_at = totals, now
        return {name: round(value, 2) for name, value in sorted(cores.items(), key=lambda item: -item[1])}


def cores_in_words(cores: dict[str, float]) -> str:
    """'job 1.21 (jvm 0.98, rocksdb 0.20), clickhouse 0.31, ...': the components over 0.01 core."""
    job = cores.get("job", 0.0)
    parts = [f"job {job:.2f} (jvm {cores.get('job.jvm', 0.0):.2f}, rocksdb {cores.get('job.rocksdb', 0.0):.2f})"]
    others = {name: value for name, value in cores.items() if "." not in name and name != "job"}
    parts += [f"{name} {value:.2f}" for name, value in others.items() if value > 0.01]
    return ", ".join(parts)
