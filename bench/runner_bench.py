"""Pipeline runner figures (run by hand, not a test; results go to docs/operations.md).

    .venv/bin/python bench/runner_bench.py [--defined 20] [--running 3] [--idle-seconds 60] [--driver-memory 1g]

Starts its own Kafka, ClickHouse and Redis (localstack.processes), a fresh PostgreSQL database, and a real Celery
worker with beat (default watch interval, 5 s), then measures:
1. deploy -> status running, and deploy -> first row in ClickHouse (one pipeline, 1,000 events waiting);
2. the watcher's CPU cost: CPU seconds the worker's processes (main, pool, beat) use per minute with
   `--defined` pipelines defined and none running (baseline), then with `--running` of them running;
3. resident memory of each running job's whole process tree (supervisor, driver, JVM, Python workers), and
   what ten would need against the machine's memory;
4. SIGKILL of a running job's process group -> running again (the watcher notices, backoff 5 s, Spark restarts).
Prints medians where there are several samples. The database is dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def wait(predicate, timeout: float, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"not within {timeout} s")


def tree_cpu(pid: int) -> float:
    import psutil

    total = 0.0
    try:
        root = psutil.Process(pid)
        for process in [root, *root.children(recursive=True)]:
            try:
                times = process.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--defined", type=int, default=20)
    parser.add_argument("--running", type=int, default=3)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--driver-memory", default="1g")
    args = parser.parse_args()

    from localstack import processes, service_defs

    work = Path(tempfile.mkdtemp(prefix="runner-bench-"))
    db_name = f"clearflow_bench_{os.getpid()}"
    with processes.ProcessGroup(work / "logs") as group:
        kafka_port, ch_port, redis_port = processes.free_port(), processes.free_port(), processes.free_port()
        group.start(service_defs.kafka_broker(port=kafka_port, data_dir=work / "kafka"))
        group.start(service_defs.clickhouse(port=ch_port, data_dir=work / "clickhouse"))
        group.start(service_defs.redis(port=redis_port, data_dir=work / "redis"))
        bootstrap, redis_url = f"127.0.0.1:{kafka_port}", f"redis://127.0.0.1:{redis_port}/0"
        base_db = os.environ.get("DATABASE_URL", "postgres://clearflow@127.0.0.1:5432/clearflow")
        env = {
            "DATABASE_URL": base_db.rsplit("/", 1)[0] + "/" + db_name,
            "REDIS_URL": redis_url,
            "CLEARFLOW_VAR_DIR": str(work / "var"),
            "CLEARFLOW_DRIVER_MEMORY": args.driver_memory,
            "CLEARFLOW_SPARK_CONF": "spark.ui.enabled=false",
            "CLEARFLOW_PIPELINE_QUEUE": "pipelines",
        }
        os.environ.update(env)
        os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.config.settings"
        import psycopg

        with psycopg.connect(base_db, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{db_name}"')
        worker = None
        try:
            worker = run(args, work, env, bootstrap, ch_port)
        finally:
            if worker is not None:
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(60)
            kill_jobs()
            from django.db import connections

            connections.close_all()
            with psycopg.connect(base_db, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')


def kill_jobs() -> None:
    import psutil

    from webapp.pipelines.models import PipelineRun

    for pid, started in PipelineRun.objects.filter(ended_at__isnull=True).values_list("pid", "process_started"):
        try:
            if abs(psutil.Process(pid).create_time() - started) < 0.05:
                os.killpg(pid, signal.SIGKILL)
        except (psutil.Error, ProcessLookupError, TypeError):
            pass


def produce(bootstrap: str, topic: str, n: int, prefix: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, json.dumps({"event_id": f"{prefix}-{i}", "n": i}).encode(), partition=i % 2)
    producer.flush(30)


def run(args: argparse.Namespace, work: Path, env: dict, bootstrap: str, ch_port: int) -> subprocess.Popen:
    import django

    django.setup()
    import clickhouse_connect
    import psutil
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
    from webapp.pipelines import services
    from webapp.pipelines.models import Pipeline, PipelineRun
    from worker import jobs

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password=uuid.uuid4().hex)
    kafka = kafka_connection_create(owner=user, data={"name": "k", "bootstrap_servers": bootstrap})
    ch_conn = clickhouse_connection_create(owner=user, data={"name": "c", "host": "127.0.0.1", "port": ch_port})
    ch = clickhouse_connect.get_client(host="127.0.0.1", port=ch_port)
    pipelines = []
    for i in range(args.defined):
        topic = f"bench-{i}-{uuid.uuid4().hex[:6]}"
        produce(bootstrap, topic, 1000 if i < args.running else 0, f"e{i}")
        spec = {
            "source": {"topics": [topic], "starting_offsets": "earliest",
                       "fields": [{"path": "event_id", "type": "string"}, {"path": "n", "type": "int"}]},
            "dedup": {"keys": ["event_id"], "window": "1h"},
            "sink": {"clickhouse": {"database": "default"}, "table": f"bench_{i}_{uuid.uuid4().hex[:6]}",
                     "create_table": True, "engine": "MergeTree", "order_by": ["event_id"],
                     "columns": [{"field": "event_id", "column": "event_id", "type": "String"},
                                 {"field": "n", "column": "n", "type": "Int64"}]},
        }  # fmt: skip
        pipelines.append(
            services.pipeline_create(
                owner=user, name=f"bench-{i}", kafka_connection=kafka, clickhouse_connection=ch_conn, spec=spec
            )
        )
    with open(work / "worker.log", "wb") as worker_log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "worker.celery", "worker", "-B", "-Q", "pipelines,celery",
             "--concurrency", "2", "--loglevel", "WARNING", "--schedule", str(work / "beat-schedule")],
            cwd=REPO, env={**os.environ, **env}, stdout=worker_log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    time.sleep(10)  # let the worker and beat settle before measuring
    log(f"worker up; {args.defined} pipelines defined; work dir {work}")

    cpu0 = tree_cpu(worker.pid)
    time.sleep(args.idle_seconds)
    idle_cpu = (tree_cpu(worker.pid) - cpu0) / args.idle_seconds * 60
    log(f"watcher, {args.defined} defined, 0 running: {idle_cpu:.2f} CPU s per minute")

    def table_rows(p: Pipeline) -> int:
        table = p.spec.sink.table
        return ch.command(f"SELECT count() FROM `{table}`") if ch.command(f"EXISTS TABLE `{table}`") else 0

    to_running, to_row = [], []
    for p in pipelines[: args.running]:
        started = time.monotonic()
        services.pipeline_deploy(pipeline=p, user=user)
        wait(lambda p=p: Pipeline.objects.get(pk=p.pk).status == "running", 600, 0.2)
        to_running.append(time.monotonic() - started)
        wait(lambda p=p: table_rows(p) > 0, 600, 0.2)
        to_row.append(time.monotonic() - started)
        log(f"{p.name}: running after {to_running[-1]:.1f} s, first row after {to_row[-1]:.1f} s")

    cpu0 = tree_cpu(worker.pid)
    time.sleep(args.idle_seconds)
    busy_cpu = (tree_cpu(worker.pid) - cpu0) / args.idle_seconds * 60
    log(f"watcher, {args.defined} defined, {args.running} running: {busy_cpu:.2f} CPU s per minute")

    rss = []
    for run in PipelineRun.objects.filter(ended_at__isnull=True):
        rss.append(jobs.memory_bytes(pid=run.pid, process_started=run.process_started) / 2**20)
    total_mib = psutil.virtual_memory().total / 2**20
    log(f"RSS per running job (MiB): {[round(r) for r in rss]}; machine {total_mib:.0f} MiB")

    victim = pipelines[0]
    run = PipelineRun.objects.get(pipeline=victim, ended_at__isnull=True)
    started = time.monotonic()
    os.killpg(run.pid, signal.SIGKILL)
    wait(lambda: PipelineRun.objects.filter(pipeline=victim, running_at__isnull=False).exclude(pk=run.pk).exists(),
         600, 0.2)  # fmt: skip
    recovered = time.monotonic() - started
    log(f"SIGKILL -> running again: {recovered:.1f} s")

    print(json.dumps({
        "deploy_to_running_s": [round(x, 1) for x in to_running],
        "deploy_to_first_row_s": [round(x, 1) for x in to_row],
        "deploy_to_first_row_median_s": round(statistics.median(to_row), 1),
        "watcher_cpu_s_per_min_idle": round(idle_cpu, 2),
        "watcher_cpu_s_per_min_running": round(busy_cpu, 2),
        "rss_per_job_mib": [round(r) for r in rss],
        "rss_per_job_median_mib": round(statistics.median(rss)) if rss else None,
        "ten_jobs_mib": round(10 * statistics.median(rss)) if rss else None,
        "machine_mib": round(total_mib),
        "sigkill_to_running_s": round(recovered, 1),
        "driver_memory": args.driver_memory,
    }, indent=2))  # fmt: skip
    return worker


if __name__ == "__main__":
    main()
