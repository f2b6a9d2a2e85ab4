"""The benchmarks' pipeline and job process, shared by bench/engine_bench.py and bench/latency.py (run by hand).

`bench_spec` is the benchmark's pipeline (5 fields, dedup on event_id or none); `job_argv` the job's command
line (`python -m spark_jobs.run`, or the ingest ceiling); `JobProcess` runs a job in its own session and samples
its process tree for peak RSS and CPU time per component (the JVM, the Python workers, the driver).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the spec builder the tests use too

from tests.specs import Column, Field, spec_dict  # noqa: E402 - after the repository is on the path


def patient(service: Any) -> Any:
    """A localstack service definition with 10 minutes to get ready: under `nice -n 19` on a loaded shared machine
    the broker took more than its usual minute."""
    return dataclasses.replace(service, ready_timeout=600.0)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def cpu_seconds(pid: int) -> float:
    """CPU time of a process and of its children it has reaped (utime, stime, cutime, cstime)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _component(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    if argv and argv[0].endswith(b"java"):
        return "jvm"
    if b"pyspark.daemon" in argv:
        return "python_workers"
    return "python_driver"


def _has_cmdline(pid: int) -> bool:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return bool(f.read())


def _descendants(root_pid: int) -> list[int]:
    """The job's process tree: the runner, Spark's JVM and the Python workers (PySpark's worker daemon puts
    itself in a process group of its own, so the tree is followed by parent pid, not by group)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [root_pid]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def sample_tree(root_pid: int, cpu: dict[int, tuple[str, float]]) -> int:
    """RSS summed over the job's process tree; records each member's latest CPU time in `cpu`."""
    total = 0
    for pid in _descendants(root_pid):
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            # Classified at every sample: Spark's launcher script becomes the JVM by exec, keeping its pid. An
            # exiting process (a zombie) has no command line any more: it keeps the kind it had.
            kind = _component(pid)
            if pid in cpu and kind == "python_driver" and not _has_cmdline(pid):
                kind = cpu[pid][0]
            cpu[pid] = (kind, cpu_seconds(pid))
        except (OSError, ProcessLookupError):
            continue
    return total


class JobProcess:
    """A job process (its own session) whose process tree is sampled for peak RSS and CPU time per component."""

    def __init__(self, argv: list[str], log_file: Path, env: dict[str, str], services: dict[str, int]) -> None:
        self.peak = 0
        self.cpu: dict[int, tuple[str, float]] = {}
        self.services = services
        self._services_before = {name: cpu_seconds(pid) for name, pid in services.items()}
        self._out = open(log_file, "wb")  # noqa: SIM115 - closed in wait()
        self.process = subprocess.Popen(
            argv, cwd="/", stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, sample_tree(self.process.pid, self.cpu))
            time.sleep(0.25)

    def wait(self, timeout: float = 3600) -> int:
        try:
            code = self.process.wait(timeout=timeout)
        finally:
            self._stop.set()
            self._sampler.join()
            self._out.close()
        return code

    def cpu_by_component(self) -> dict[str, float]:
        result: dict[str, float] = {}
        for kind, seconds in self.cpu.values():
            result[kind] = result.get(kind, 0.0) + seconds
        for name, pid in self.services.items():
            result[name] = cpu_seconds(pid) - self._services_before[name]
        return {k: round(v, 1) for k, v in sorted(result.items())}


def job_argv(spec_file: Path, checkpoint: Path, spark_conf: list[str], *, ceiling: bool = False) -> list[str]:
    program = [str(REPO / "bench" / "ingest_ceiling.py")] if ceiling else ["-m", "spark_jobs.run"]
    return [
        sys.executable,
        *program,
        "--spec",
        str(spec_file),
        "--checkpoint",
        str(checkpoint),
        "--master",
        "local[2]",
        "--shuffle-partitions",
        "2",
        "--conf",
        "spark.ui.enabled=false",
        *[arg for item in spark_conf for arg in ("--conf", item)],
    ]


FIELDS: tuple[Field, ...] = (
    ("event_id", "string"),
    ("user.id", "uuid"),
    ("email", "string"),
    ("amount", "float"),
    ("created_at", "datetime"),
)
COLUMNS: tuple[Column, ...] = (
    ("event_id", "event_id", "String"),
    ("user.id", "user_id", "UUID"),
    ("email", "email", "String"),
    ("amount", "amount", "Float64"),
    ("created_at", "created_at", "DateTime64(3, 'UTC')"),
)


def bench_spec(
    *,
    topic: str,
    bootstrap: str,
    clickhouse: tuple[str, int],
    dedup: bool,
    max_records_per_batch: int,
    extra_columns: tuple[Column, ...] = (),
) -> dict:
    """The benchmark's pipeline: 5 fields, dedup on event_id (1h window, ingestion time) or none."""
    kind = "dedup" if dedup else "nodedup"
    return spec_dict(
        version=1,
        name=f"bench-{kind}-{uuid.uuid4().hex[:6]}",
        kafka=bootstrap,
        topics=[topic],
        starting_offsets="earliest",
        fields=FIELDS,
        source={"max_records_per_batch": max_records_per_batch},
        dedup={"keys": ["event_id"], "window": "1h", "time": "ingestion"} if dedup else None,
        clickhouse=clickhouse,
        table=f"bench_{kind}_{uuid.uuid4().hex[:6]}",
        order_by=["event_id"],
        columns=[*COLUMNS, *extra_columns],
    )
