"""Processes a streaming query's JVM starts while it runs, with and without the engine's in-process local file
system (spark_jobs.pipeline.IN_PROCESS_LOCAL_FILES), run by hand, not a test:

    .venv/bin/python bench/process_starts.py --seconds 15

Each variant is its own Python process and JVM: a rate source at 1,000 rows/s through a RocksDB dedup state (two
partitions) into `noop`, a `file:` checkpoint, a 500 ms trigger. `strace -f -e trace=execve` follows the JVM
while the query runs; a process start is one `jspawnhelper` exec (Java's launcher), the other `execve` calls are
its search of the PATH. Needs strace (apt-get install -y strace).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def query(seconds: float, in_process: bool) -> None:
    """The measured side: prints the JVM's pid, waits for the tracer, runs the query."""
    sys.path.insert(0, str(REPO))
    from spark_jobs.session import build_session, state_store_conf, use_in_process_local_files

    spark = build_session(app_name="process-starts", master="local[2]")
    for key, value in state_store_conf().items():
        spark.conf.set(key, value)
    used = use_in_process_local_files(spark) if in_process else False
    print(f"PID {spark._jvm.java.lang.ProcessHandle.current().pid()} in_process={used}", flush=True)
    time.sleep(3)  # strace attaches
    checkpoint = tempfile.mkdtemp(prefix="process-starts-")
    rate = spark.readStream.format("rate").option("rowsPerSecond", 1000).load()
    running = (
        rate.withWatermark("timestamp", "10 seconds")
        .dropDuplicatesWithinWatermark(["value"])
        .writeStream.format("noop")
        .option("checkpointLocation", f"file://{checkpoint}")
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    time.sleep(seconds)
    running.stop()
    print(f"BATCHES {len(running.recentProgress)}", flush=True)
    spark.stop()


def measure(seconds: float, in_process: bool) -> dict[str, object]:
    child = subprocess.Popen(
        [sys.executable, __file__, "--query", f"--seconds={seconds}", *(["--in-process"] if in_process else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None
    first = child.stdout.readline()
    pid = int(re.search(r"PID (\d+)", first).group(1))  # type: ignore[union-attr]
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as trace:
        tracer = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=execve", "-o", trace.name, "-p", str(pid)])
        rest = child.stdout.read()
        child.wait()
        tracer.wait(timeout=30)
        calls = Path(trace.name).read_text().splitlines()
    spawns = [c for c in calls if "jspawnhelper" in c and "execve(" in c]
    commands = sorted({m.group(1) for c in calls if (m := re.search(r'execve\("[^"]*/(\w+)"', c))} - {"jspawnhelper"})
    batches = int(re.search(r"BATCHES (\d+)", rest).group(1))  # type: ignore[union-attr]
    return {
        "in_process": "in_process=True" in first,
        "processes": len(spawns),
        "execve": len(calls),
        "batches": batches,
        "commands": commands,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--query", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.query:
        query(args.seconds, args.in_process)
        return 0
    os.environ.setdefault("PYTHONPATH", str(REPO))
    for in_process in (False, True):
        result = measure(args.seconds, in_process)
        print(
            f"in-process local files: {result['in_process']!s:5} | processes started {result['processes']:4} "
            f"| execve {result['execve']:5} | batches {result['batches']} | {', '.join(result['commands'])}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
