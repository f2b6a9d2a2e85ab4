"""One light job's memory at steady state, per JVM/Spark variant (run by hand; results go to docs/performance.md).

    nice -n 19 ionice -c3 .venv/bin/python bench/footprint.py [--variant NAME ...] [--settle 60] [--samples 5]

Starts Apache Kafka and ClickHouse (chDB), then for each variant, one after the other: a topic fed at --rate
events/s (100: a light pipeline, 10% re-sends), and the job the worker would launch for it (`worker.jobs.JobLaunch`
sized by `clearflow_spec.sizing` for that rate: its heap, RocksDB bound and trigger; `job_command` and `job_env`), with
the variant's JVM options, Spark settings and environment on top. Once its first row is in ClickHouse and
--settle seconds more have passed, it samples the PSS of the job's process tree (JVM, Python driver, Python
workers: `density.tree_pss`) --samples times 10 s apart and reports the median, the JVM's heap (`density.jvm_heap`,
no full GC) and the tree's CPU over the sampling (and its CPU seconds from its start to the first row and to the
end of the sampling: JVM start and JIT compilation, what many jobs starting together compete for); then stops
the producer, checks the rows are exact (count() = uniqExact = the unique events produced) and stops the job.
`launch` is the job as the worker starts it now, with no extra option: the variants before it were measured to
choose what `launch` carries.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench_pipeline import REPO, _descendants, bench_spec, log, patient
from density import cpu_between, jvm_heap, tree_cpu, tree_pss
from latency import _event

sys.path.insert(0, str(REPO))

# What smaps_rollup says of a tree beside its PSS: Private_Dirty is what a second job could never share (the heap,
# malloc, a relocated class-data archive); Pss_File, the files' pages it maps (jars, libraries, the archive), which
# other jobs of the same install share (alone, a job's PSS counts them in full).
ROLLUP_FIELDS = ("Pss_Anon", "Pss_File", "Private_Dirty")


def tree_rollup(pid: int) -> dict[str, int]:
    """ROLLUP_FIELDS summed over a job's process tree, bytes."""
    totals = dict.fromkeys(ROLLUP_FIELDS, 0)
    for member in _descendants(pid):
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{member}/smaps_rollup").read_text().splitlines():
                key, _, value = line.partition(":")
                if key in totals:
                    totals[key] += int(value.split()[0]) * 1024
    return totals


def archive_dirty(pid: int) -> int:
    """Private dirty bytes of the class-data archives (*.jsa) mapped by the job's JVM: the archive's pages this job
    holds for itself (all of them when the JVM relocated the archive)."""
    total = 0
    for member in _descendants(pid):
        with contextlib.suppress(OSError, ValueError):
            in_archive = False
            for line in Path(f"/proc/{member}/smaps").read_text().splitlines():
                first = line.split(maxsplit=1)[0] if line.strip() else ""
                if "-" in first and not first.endswith(":"):
                    in_archive = line.rstrip().endswith(".jsa")
                elif in_archive and first == "Private_Dirty:":
                    total += int(line.split()[1]) * 1024
    return total


SERIAL_SMALL = "-XX:+UseSerialGC -Xms32m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30"
CDS_AT_ITS_ADDRESS = "-XX:+UnlockDiagnosticVMOptions -XX:ArchiveRelocationMode=0"
# Extra driver JVM options per variant (appended to what the launch gives), Spark settings and environment.
VARIANTS: dict[str, dict[str, Any]] = {
    "launch": {},
    # A variant's options replace the launch's light ones (spark.driver.extraJavaOptions wins over
    # --driver-java-options), after the session's own (-Xss32m, the archive with spark_jobs.cds's mapping): since
    # the archive is mapped at its address, g1-512m is main's job with that one change, not main's job.
    "g1-512m": {"java": "-XX:+UseG1GC"},
    "serial": {"java": "-XX:+UseSerialGC"},
    "serial-xms": {"java": "-XX:+UseSerialGC -Xms32m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30"},
    "serial-xms-c1": {
        "java": "-XX:+UseSerialGC -Xms32m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30 "
        "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=64m"
    },
    "serial-xms-trim": {
        "java": "-XX:+UseSerialGC -Xms32m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30 "
        "-XX:+UnlockExperimentalVMOptions -XX:TrimNativeHeapInterval=5000"
    },
    "serial-xms-cds0": {"java": f"{SERIAL_SMALL} {CDS_AT_ITS_ADDRESS}"},
    "g1-cds0": {"java": f"-XX:+UseG1GC {CDS_AT_ITS_ADDRESS}"},
    "serial-xms-cds0-c1": {
        "java": f"{SERIAL_SMALL} {CDS_AT_ITS_ADDRESS} -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=64m"
    },
    # A light pipeline's micro-batches: a longer trigger, one state partition instead of one per core (the job's
    # runner arguments, given after the launch's own: the last one wins).
    "trigger-2s": {"args": ["--trigger-interval", "2 seconds"]},
    "trigger-5s": {"args": ["--trigger-interval", "5 seconds"]},
    "partitions-1": {"args": ["--shuffle-partitions", "1"]},
    "partitions-1-trigger-2s": {"args": ["--shuffle-partitions", "1", "--trigger-interval", "2 seconds"]},
    "partitions-1-trigger-5s": {"args": ["--shuffle-partitions", "1", "--trigger-interval", "5 seconds"]},
    "serial-xms-ci2": {
        "java": "-XX:+UseSerialGC -Xms32m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30 -XX:CICompilerCount=2 "
        "-XX:ReservedCodeCacheSize=64m -XX:MaxDirectMemorySize=64m"
    },
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="default: launch")
    parser.add_argument("--rate", type=int, default=100, help="events/s produced to the job's topic")
    parser.add_argument("--settle", type=int, default=60, help="seconds after the first row before sampling")
    parser.add_argument("--samples", type=int, default=5, help="PSS samples, 10 s apart")
    parser.add_argument("--out", help="write the results here (JSON)")
    return parser.parse_args(argv)


def launch_for(rate: int, run_dir: Path, spec: dict[str, Any], redis_url: str | None = None) -> Any:
    """The JobLaunch the worker would make for a pipeline at `rate` events/s (1h window)."""
    from clearflow_spec.sizing import (
        STATE_PARTITIONS_CONF,
        is_light,
        state_estimate,
        state_partitions,
        trigger_interval,
    )
    from clearflow_spec.spec import parse_spec
    from worker.jobs import JobLaunch

    estimate = state_estimate(events_per_second=rate, window_seconds=3600)
    partitions = state_partitions(events_per_second=rate, keys=estimate.keys)
    return JobLaunch(
        name=spec["name"],
        run_dir=run_dir,
        checkpoint=str(run_dir / "checkpoint"),
        master="local[2]",
        spec=parse_spec(json.dumps(spec)),
        redis_url=redis_url,
        driver_memory=estimate.driver_memory,
        trigger_interval=trigger_interval(rate),
        spark_conf=(
            f"spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB={estimate.rocksdb_memory_mb}",
            *([f"{STATE_PARTITIONS_CONF}={partitions}"] if partitions else []),
        ),
        idle_after_first_batch=is_light(events_per_second=rate, keys=estimate.keys),
    )


def measure(name: str, args: argparse.Namespace, bootstrap: str, ch: tuple[str, int], workdir: Path) -> dict[str, Any]:
    import clickhouse_connect
    from confluent_kafka.admin import AdminClient, NewTopic

    from spark_jobs import cds
    from worker.jobs import job_command, job_env, write_spec

    variant = VARIANTS[name]
    topic = f"footprint-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    spec = bench_spec(topic=topic, bootstrap=bootstrap, clickhouse=ch, dedup=True, max_records_per_batch=500_000)
    run_dir = workdir / name
    launch = launch_for(args.rate, run_dir, spec)
    command = job_command(launch, write_spec(run_dir, launch.spec))
    if variant.get("java"):  # the session's own options (thread stack, class-data archive) stay first
        base = " ".join(filter(None, ["-Xss32m", cds.java_options()]))
        command += ["--conf", f"spark.driver.extraJavaOptions={base} {variant['java']}"]
    command += [arg for item in variant.get("conf", ()) for arg in ("--conf", item)]
    command += variant.get("args", [])  # after the runner's own: argparse keeps the last, the variant's
    env = {**job_env(launch), **variant.get("env", {})}
    log(f"{name}: {' '.join(command[3:])}")
    client = clickhouse_connect.get_client(host=ch[0], port=ch[1])
    table = spec["sink"]["table"]
    produced: dict[str, Any] = {}

    stop_producing = threading.Event()

    def produce() -> None:
        """`args.rate` events/s (latency._event's, every tenth a re-send) until told to stop."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        begun, sent, unique = time.monotonic(), 0, 0
        while not stop_producing.is_set():
            for _ in range(int(args.rate * (time.monotonic() - begun)) - sent):
                k = max(0, unique - 1 - sent % 50) if sent % 10 == 9 and unique else unique
                unique += k == unique
                producer.produce(topic, _event(k), partition=sent % 2)
                sent += 1
            producer.poll(0)
            time.sleep(0.01)
        producer.flush(60)
        produced.update(sent=sent, unique=unique)

    with open(run_dir / "job.log", "wb") as out:
        job = subprocess.Popen(command, cwd=run_dir, stdout=out, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True)  # fmt: skip
    started = time.monotonic()
    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    result: dict[str, Any] = {"variant": name, "java": variant.get("java", ""), "driver_memory": launch.driver_memory}
    try:
        deadline = started + 600
        while True:
            if job.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name}: no first row (exit {job.poll()}); see {run_dir / 'job.log'}")
            with contextlib.suppress(Exception):  # the table is not there yet
                if client.command(f"SELECT count() FROM {table}") > 0:
                    break
            time.sleep(0.5)
        result["start_to_first_row_s"] = round(time.monotonic() - started, 1)
        # The tree's CPU from its start (JVM start, JIT compilation, the first batches): what many jobs starting
        # together compete for. The processes still alive only: a lower bound.
        result["cpu_to_first_row_s"] = round(cpu_between({}, tree_cpu(job.pid)), 1)
        time.sleep(args.settle)
        cpu_before = tree_cpu(job.pid)
        samples, rollups = [], []
        for _ in range(args.samples):
            samples.append(tree_pss(job.pid))
            rollups.append(tree_rollup(job.pid))
            time.sleep(10)
        cpu_after = tree_cpu(job.pid)
        cpu = cpu_between(cpu_before, cpu_after)
        result["cpu_to_end_s"] = round(cpu_between({}, cpu_after), 1)
        result["cpu_cores"] = round(cpu / (10 * args.samples), 3)
        result["pss_mb"] = round(statistics.median(sum(s.values()) for s in samples) / 2**20)
        result["pss_by_part_mb"] = {
            part: round(statistics.median(s[part] for s in samples) / 2**20) for part in samples[0]
        }
        result["rollup_mb"] = {key: round(statistics.median(r[key] for r in rollups) / 2**20) for key in ROLLUP_FIELDS}
        result["archive_private_dirty_mb"] = round(archive_dirty(job.pid) / 2**20)
        result["heap"] = jvm_heap(job.pid, full_gc=False)
        stop_producing.set()
        producer.join(120)
        deadline = time.monotonic() + 120
        rows = unique_rows = 0
        while time.monotonic() < deadline:
            rows, unique_rows = client.query(f"SELECT count(), uniqExact(event_id) FROM {table}").result_rows[0]
            if rows >= produced.get("unique", 0):
                break
            time.sleep(2)
        result["rows"] = {"count": rows, "unique": unique_rows, "produced_unique": produced.get("unique")}
        result["exact"] = rows == unique_rows == produced.get("unique")
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGTERM)
            try:
                job.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
    log(f"{name}: {json.dumps(result)}")
    return result


def main() -> int:
    args = parse_args()
    # A kill ends the job and the services too (the `finally`s and the process group's exit run on SystemExit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from localstack import processes, service_defs

    workdir = Path(tempfile.mkdtemp(prefix="clearflow-footprint-"))
    results = []
    with processes.ProcessGroup(workdir / "logs") as group:
        port = processes.free_port()
        group.start(patient(service_defs.kafka_broker(port=port, data_dir=workdir / "kafka")))
        ch_port = processes.free_port()
        group.start(patient(service_defs.clickhouse(port=ch_port, data_dir=workdir / "chdata")))
        for name in args.variant or ["launch"]:
            try:
                results.append(measure(name, args, f"127.0.0.1:{port}", ("127.0.0.1", ch_port), workdir))
            except RuntimeError as exc:
                log(str(exc))
                results.append({"variant": name, "error": str(exc)})
            if args.out:
                Path(args.out).write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
