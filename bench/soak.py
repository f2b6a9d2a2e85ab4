"""Steady-state soak (run by hand, not a test): one pipeline, deployed through the REST API, under a steady load.

    nice -n 19 .venv/bin/python bench/soak.py --rate 2000 --minutes 3              # a smoke run
    .venv/bin/python bench/soak.py --rate 20000 --minutes 30 --window 1h --out var/soak/20k-1h
    .venv/bin/python bench/soak.py --rate 20000 --minutes 30 --window 1h --checkpoint s3 --out var/soak/20k-1h-s3

Starts the whole local stack as `make up` does (`python -m localstack up`: Kafka, ClickHouse, the schema registry,
Redis, the web app, a Celery worker and beat) on free ports, with its state in a temporary directory and a
PostgreSQL database of its own, both removed at the end (--keep keeps them). Then, through the REST API with an API
token: a Kafka and a ClickHouse connection, and one pipeline with the product's defaults (dedup on a UUID `id`,
window --window, --time ingestion|event, job memory left to the product). A producer process sends --rate JSON
events/s, --dup-share of them re-sends of a recent event (the same bytes), from --lead-seconds (60) before the
deploy on: the product sizes the job's memory from the topic's recent rate (over the last minute: keep it at 60 or
more), as it would for a topic already in use (0: deployed on a quiet topic). The expected state the API's
validation gives then goes into the summary. The --minutes count from when the job runs; the first one catches up
with the lead time's events.

Each minute one line: events/s produced, rows in ClickHouse (and the unique ids produced so far), p50/p95 from
produced to visible, micro-batch duration, lag, dedup state keys and bytes on disk, JVM heap used, job RSS and
restarts. How each is measured:
- produced -> visible: `produced_at` is the producer's clock (epoch ms) when it called produce(); visible is the
  row's `_cf_ingested_at`, the `DEFAULT now64(3)` column of every table ClearFlow creates: ClickHouse's clock
  (the same machine's) when the insert carrying the row arrived. The minute's rows are those whose
  `_cf_ingested_at` falls in it, counted by ClickHouse into 10 ms buckets (`soak_series`), read 5 s after the
  minute ends so that its last inserts are committed;
- batches (those that ended in the minute), lag, state keys: the job's metrics in Redis
  (`clearflow_spec.protocol.history_key` / `latest_key`: the dedup operator's numRowsTotal);
- state bytes on disk: the size of every `state` directory in the stack's checkpoints;
- heap: `jstat -gc` of the job's JVM (S0U+S1U+EU+OU); RSS: the job's process tree (supervisor, Python driver,
  JVM, Python workers); restarts: the pipeline's runs in the API, less one;
- the state store's commit per batch: the job's metrics (`phases_ms`): `state_commit` (Spark's commitTimeMs, the
  whole commit) and, of it, `rocksdb_file_sync` (RocksDB's files synced to the checkpoint's storage: the upload),
  as the mean over the minute's batches and their p95.
--kill-every N sends SIGKILL to the job's whole process group every N minutes (recovery under load).
--checkpoint s3 puts the checkpoints on S3 as `CLEARFLOW_CHECKPOINT_ROOT=s3a://clearflow/checkpoints make up` does
(the stack's own S3Proxy, here on a free port; its objects in its memory), and at the end checks that the
pipeline's offsets, commits and state are in the bucket and nothing is under the stack's local checkpoint directory
(summary.json's `checkpoint`). The state's bytes on disk are then not measured (no local state directory).

--mode says in what order a person meets the load:
- `steady` (the default): the load runs --lead-seconds before the deploy, so the product sizes from the topic;
- `ramp`: deployed on a quiet topic (nothing produced before), then --rate from when its job runs: the product
  must re-size it while it runs (clearflow_spec.pace). The minutes count from the load's start;
- `backlog`: the load runs, the pipeline is deployed and runs --warmup-minutes, is stopped for --backlog-minutes
  while the load goes on, then resumed on that backlog. The minutes count from the resume.
Each minute's line has the pipeline's pace (keeping up, catching up, behind) and the summary the first minute from
which it kept up to the end (`caught_up_at_minute`).

At the end, once the job has caught up: the exact-rows check (count() and uniqExact(id) against the unique ids
produced), then summary.json, minutes.csv (also rewritten every minute) and soak.png in --out. Ctrl-C ends the
load early and writes them for the minutes so far.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_pipeline import REPO, log, sample_tree
from cpu_watch import CpuWatch, cores_in_words
from soak_series import (
    LATENCY_BUCKET_MS,
    LONGEST_BATCH_MS,
    STATE_COMMIT_PHASE,
    STATE_UPLOAD_PHASE,
    MinuteSample,
    ended_within,
    heap_used_bytes,
    histogram_percentile,
    minute_line,
    percentile,
    phase_per_batch,
    rows_verdict,
    slowest_phases,
    state_disk_bytes,
    summarize,
    write_csv,
    write_outputs,
)

sys.path.insert(0, str(REPO))

from clearflow_spec.protocol import history_key, latest_key
from localstack.processes import free_port, wait_until
from localstack.service_defs import S3_BUCKET
from spark_jobs import object_store
from spark_jobs.s3_client import S3Client
from tests.localstack.stack_env import stack_env

START_TIMEOUT = 600  # a cold start on a loaded machine: migrations, Kafka, ClickHouse, registry, web, Celery
SETTLE_SECONDS = 5  # a minute's rows are read this long after it ends: its last inserts have committed
RECENT_EVENTS = 100_000  # re-sends pick among the last this many unique events


# --- the stack -----------------------------------------------------------------------------------------------


S3_CHECKPOINT_ROOT = f"s3a://{S3_BUCKET}/checkpoints"  # as docs/deployment.md's `make up` example has it


class Stack:
    """`python -m localstack up` on free ports, its state in a temporary directory, a database of its own.
    `checkpoint="s3"`: the checkpoints on S3 (CLEARFLOW_CHECKPOINT_ROOT=s3a://clearflow/checkpoints), which makes
    `make up` start its own S3Proxy (localstack.stack_services.local_object_store), here on a free port."""

    def __init__(self, keep: bool, *, checkpoint: str = "local") -> None:
        self.keep = keep
        self.var_dir = Path(tempfile.mkdtemp(prefix="clearflow-soak-"))
        # The product's pool of standby jobs, as a person's `make up` has it (an --env or --compare may set another).
        made = stack_env(self.var_dir, database_prefix="clearflow_soak", standby_jobs="auto")
        self.env, self.ports, self.database = made.env, made.ports, made.database
        self.checkpoint = checkpoint
        if checkpoint == "s3":
            self.ports["s3"] = free_port()
            self.env.update(
                CLEARFLOW_CHECKPOINT_ROOT=S3_CHECKPOINT_ROOT,
                **{object_store.ENDPOINT_ENV: f"http://127.0.0.1:{self.ports['s3']}"},
            )
            for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
                self.env.pop(name, None)  # the stack makes its S3Proxy's keys (var/secrets/s3proxy)
        self.token = ""
        self.process: subprocess.Popen[bytes] | None = None
        self.output = self.var_dir / "make-up.log"

    def start(self) -> None:
        subprocess.run(["bash", str(REPO / "localstack" / "system-deps.sh"), "up"], check=True, env=self.env)
        with open(self.output, "wb") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "localstack", "up"],
                cwd=REPO,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        process = self.process

        def up() -> bool:
            return process.poll() is not None or "ClearFlow is up" in self.output.read_text(errors="replace")

        if not wait_until(up, timeout=START_TIMEOUT, interval=1.0) or process.poll() is not None:
            raise SystemExit(f"the stack did not start; see {self.output}:\n{self.output.read_text()[-3000:]}")
        self.token = subprocess.run(
            [sys.executable, "manage.py", "create_api_token", "admin", "--name", "soak"],
            cwd=REPO,
            env={**self.env, "DJANGO_SETTINGS_MODULE": "webapp.config.settings"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    def s3(self) -> S3Client:
        """A client of the stack's S3Proxy, with the keys `make up` made for it."""
        secret = (self.var_dir / "secrets" / "s3proxy").read_text().strip()
        return S3Client.from_env({**self.env, "AWS_ACCESS_KEY_ID": "clearflow", "AWS_SECRET_ACCESS_KEY": secret})

    def checkpoint_where(self, pipeline_id: int) -> dict[str, Any]:
        """Where the pipeline's checkpoint is: its objects in the bucket (s3) and the files under the local
        checkpoint directory. With --checkpoint s3 the first must hold its offsets, commits and state, the second
        nothing."""
        local = self.var_dir / "checkpoints"
        local_files = sorted(str(p.relative_to(local)) for p in local.rglob("*") if p.is_file())
        where: dict[str, Any] = {"local_files": len(local_files), "local_examples": local_files[:5]}
        if self.checkpoint == "s3":
            prefix = f"{S3_CHECKPOINT_ROOT.removeprefix(f's3a://{S3_BUCKET}/')}/pipeline-{pipeline_id}/"
            keys = list(self.s3().keys(S3_BUCKET, prefix))
            parts = sorted({key.removeprefix(prefix).split("/")[0] for key in keys})
            where |= {"s3_prefix": f"s3a://{S3_BUCKET}/{prefix}", "s3_objects": len(keys), "s3_parts": parts}
            where["ok"] = {"offsets", "commits", "state"} <= set(parts) and not local_files
        else:
            where["ok"] = bool(local_files)
        return where

    def api(self, method: str, path: str, body: dict | None = None) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.ports['web']}/api/v1/{path}",
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - the local stack
                return json.load(response)
        except urllib.error.HTTPError as error:
            raise SystemExit(f"{method} /api/v1/{path}: {error.code} {error.read().decode()}") from None

    def stop(self) -> None:
        """SIGTERM, as `make down` does: the stack stops its job, then its services."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=180)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        if self.keep:
            log(f"kept the stack's state in {self.var_dir} and the database {self.database}")
            return
        import psycopg

        with psycopg.connect("postgres://clearflow@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
        shutil.rmtree(self.var_dir, ignore_errors=True)


# --- the pipeline ----------------------------------------------------------------------------------------------


def pipeline_spec(topic: str, table: str, *, window: str, time_mode: str) -> dict:
    """The pipeline a new user would create: dedup on a UUID `id`, the product's defaults otherwise."""
    dedup: dict[str, Any] = {"keys": ["id"], "window": window}
    if time_mode == "event":
        dedup.update(time="event", event_time_field="produced_at")
    return {
        "source": {
            "topics": [topic],
            "starting_offsets": "earliest",
            "fields": [
                {"path": "id", "type": "uuid"},
                {"path": "produced_at", "type": "datetime"},
                {"path": "user", "type": "string"},
                {"path": "amount", "type": "float"},
            ],
        },
        "dedup": dedup,
        "sink": {
            "clickhouse": {"database": "default"},
            "table": table,
            "create_table": True,
            "order_by": ["id"],
            "columns": [
                {"field": "id", "column": "id", "type": "UUID"},
                {"field": "produced_at", "column": "produced_at", "type": "DateTime64(3, 'UTC')"},
                {"field": "user", "column": "user", "type": "String"},
                {"field": "amount", "column": "amount", "type": "Float64"},
            ],
        },
    }


# --- the producer (a process of its own: the sampling never holds it up) ---------------------------------------


def produce_steadily(
    bootstrap: str, topic: str, partitions: int, rate: int, dup_share: float, stop: Any, sent: Any, unique: Any
) -> None:
    """`rate` events/s until `stop` is set, paced every 5 ms; `dup_share` of them re-send a recent event's bytes.
    `sent` and `unique` (shared counters) follow what was handed to the producer."""
    from confluent_kafka import Producer

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the main process, which sets `stop`
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    rng = random.Random(20)
    recent: list[bytes] = []
    n_sent = n_unique = 0
    started = time.monotonic()
    while not stop.is_set():
        elapsed = time.monotonic() - started
        for _ in range(int(rate * elapsed) - n_sent):
            if recent and rng.random() < dup_share:
                value = recent[rng.randrange(len(recent))]
            else:
                value = (
                    f'{{"id":"{uuid.uuid4()}","produced_at":{int(time.time() * 1000)},'
                    f'"user":"user-{n_unique % 5000}","amount":{(n_unique % 10000) / 7:.2f}}}'
                ).encode()
                if len(recent) < RECENT_EVENTS:
                    recent.append(value)
                else:
                    recent[n_unique % RECENT_EVENTS] = value
                n_unique += 1
            while True:
                try:
                    producer.produce(topic, value, partition=n_sent % partitions)
                    break
                except BufferError:
                    producer.poll(0.05)
            n_sent += 1
        sent.value, unique.value = n_sent, n_unique
        producer.poll(0)
        time.sleep(0.005)
    if producer.flush(120) != 0:
        raise SystemExit("the producer could not deliver every event within 120 s")


# --- sampling -----------------------------------------------------------------------------------------------------


def jvm_heap(pid: int) -> int | None:
    try:
        result = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return heap_used_bytes(result.stdout)


def job_memory(supervisor_pid: int) -> tuple[int | None, int | None, int | None]:
    """(RSS of the job's process tree, the JVM's RSS, the JVM's heap used)."""
    import psutil

    members: dict[int, tuple[str, float]] = {}
    rss = sample_tree(supervisor_pid, members)
    jvms = [pid for pid, (kind, _) in members.items() if kind == "jvm"]
    if not rss:
        return None, None, None
    if not jvms:
        return rss, None, None
    try:
        jvm_rss = psutil.Process(jvms[0]).memory_info().rss
    except psutil.Error:
        jvm_rss = None
    return rss, jvm_rss, jvm_heap(jvms[0])


def batch_start(record: dict) -> float:
    """Epoch seconds of a metrics record's micro-batch start (0 for no record)."""
    if not record.get("timestamp"):
        return 0.0
    return datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).timestamp()


class Sampler:
    def __init__(self, stack: Stack, pipeline_id: int, table: str) -> None:
        import clickhouse_connect
        import redis

        self.stack, self.pipeline_id, self.table = stack, pipeline_id, table
        self.clickhouse = clickhouse_connect.get_client(host="127.0.0.1", port=stack.ports["clickhouse"])
        self.redis = redis.Redis.from_url(stack.env["REDIS_URL"])
        self.job = f"pipeline-{pipeline_id}"
        self.cpu = CpuWatch()

    def runs(self) -> list[dict]:
        return self.stack.api("GET", f"pipelines/{self.pipeline_id}/runs/")

    def active_pid(self) -> int | None:
        runs = self.runs()
        return runs[0]["pid"] if runs and runs[0]["ended_at"] is None and runs[0]["pid"] else None

    def rows(self) -> int:
        return int(self.clickhouse.command(f"SELECT count() FROM `{self.table}`"))

    def latency_histogram(self, start_ms: int, end_ms: int) -> dict[int, int]:
        result = self.clickhouse.query(
            "SELECT intDiv(greatest(toUnixTimestamp64Milli(_cf_ingested_at) - toUnixTimestamp64Milli(produced_at), 0),"
            f" {LATENCY_BUCKET_MS}) AS bucket, count() FROM `{self.table}` "
            "WHERE _cf_ingested_at >= fromUnixTimestamp64Milli({s:Int64}) "
            "AND _cf_ingested_at < fromUnixTimestamp64Milli({e:Int64}) GROUP BY bucket",
            parameters={"s": start_ms, "e": end_ms},
        )
        return {int(bucket): int(count) for bucket, count in result.result_rows}

    def batches(self, start_ms: int, end_ms: int) -> list[dict]:
        """The batches that ended in [start_ms, end_ms) (the history scores them by their start)."""
        records = self.redis.zrangebyscore(
            history_key(self.job), start_ms - LONGEST_BATCH_MS, end_ms - 1, withscores=True
        )
        return ended_within([(json.loads(r), score) for r, score in records], start_ms, end_ms)

    def latest(self) -> dict:
        raw = self.redis.get(latest_key(self.job))
        return json.loads(raw) if raw else {}

    def pace(self) -> dict:
        """The pace the pipeline's page shows (the API's), {} before the worker's first reading."""
        return self.stack.api("GET", f"pipelines/{self.pipeline_id}/").get("pace") or {}

    def sample(self, minute: int, start: float, end: float, produced: int, unique: int, rows: int) -> MinuteSample:
        histogram = self.latency_histogram(int(start * 1000), int(end * 1000))
        batches = self.batches(int(start * 1000), int(end * 1000))
        durations = [b["batch_duration_ms"] for b in batches]
        commit_total, commit_p95 = phase_per_batch(batches, STATE_COMMIT_PHASE)
        upload_total, upload_p95 = phase_per_batch(batches, STATE_UPLOAD_PHASE)
        latest = self.latest()
        pace = self.pace()
        runs = self.runs()
        pid = runs[0]["pid"] if runs and runs[0]["ended_at"] is None else None
        rss, jvm_rss, heap = job_memory(pid) if pid else (None, None, None)

        return MinuteSample(
            minute=minute,
            produced=produced,
            rows=rows,
            expected_unique=unique,
            latency_p50_ms=histogram_percentile(histogram, 0.50),
            latency_p95_ms=histogram_percentile(histogram, 0.95),
            rows_visible=sum(histogram.values()),
            batches=len(durations),
            batch_p50_ms=percentile(durations, 0.50),
            batch_max_ms=max(durations) if durations else None,
            # The lag the worker read from the brokers (a slow or stuck job's too); before its first reading, the
            # latest batch's (which may be a dead job's: its lag says nothing of now).
            lag=pace.get("lag") if pace else (latest.get("total_lag") if batch_start(latest) >= start else None),
            state_keys=latest.get("state_rows"),
            state_memory_bytes=latest.get("state_memory_bytes"),
            state_disk_bytes=state_disk_bytes(self.stack.var_dir / "checkpoints"),
            heap_used_bytes=heap,
            rss_bytes=rss,
            jvm_rss_bytes=jvm_rss,
            restarts=max(0, len(runs) - 1),
            resizes=sum(1 for r in runs if r.get("outcome") == "resized"),
            pace=str(pace.get("state") or ""),
            load_avg_1m=round(os.getloadavg()[0], 2),
            slowest_batch_phases=slowest_phases(batches),
            cpu_cores=cores_in_words(self.cpu.take(pid)),
            state_commit_total_ms=commit_total,
            state_commit_p95_ms=commit_p95,
            state_upload_total_ms=upload_total,
            state_upload_p95_ms=upload_p95,
            histogram=histogram,
        )


# --- main -----------------------------------------------------------------------------------------------------------


def measure_minutes(
    args: argparse.Namespace,
    sampler: Sampler,
    samples: list[MinuteSample],
    started: float,
    sent: Any,
    unique: Any,
    out: Path,
) -> None:
    """A sample and its line each minute (appended to `samples`; minutes.csv rewritten), and the kills asked for."""
    sent_before = sent.value  # the lead time's events are in the first minute's backlog, not in its rate
    for minute in range(1, args.minutes + 1):
        tick = started + 60 * minute
        time.sleep(max(0.0, tick - time.time()))
        sent_now, unique_now, rows = sent.value, unique.value, sampler.rows()
        time.sleep(SETTLE_SECONDS)
        sample = sampler.sample(minute, tick - 60, tick, sent_now - sent_before, unique_now, rows)
        sent_before = sent_now
        samples.append(sample)
        print(minute_line(sample), flush=True)
        write_csv(out, samples)
        if args.kill_every and minute % args.kill_every == 0 and minute < args.minutes:
            pid = sampler.active_pid()
            if pid:
                log(f"SIGKILL to the job's process group {pid}")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=20_000, help="events/s produced (default 20000)")
    parser.add_argument("--minutes", type=int, default=30, help="how long to produce (default 30)")
    parser.add_argument("--window", default="1h", help="the dedup window (default 1h)")
    parser.add_argument("--dup-share", type=float, default=0.10, help="share of events that re-send one (0.1)")
    parser.add_argument("--time", choices=["ingestion", "event"], default="ingestion", help="the dedup's time")
    parser.add_argument("--partitions", type=int, default=2, help="the topic's partitions (default 2)")
    parser.add_argument(
        "--lead-seconds",
        type=int,
        default=60,
        help="produce this long before deploying (the topic's rate sizes the job)",
    )
    parser.add_argument("--kill-every", type=int, default=0, metavar="N", help="SIGKILL the job every N minutes")
    parser.add_argument("--mode", choices=["steady", "ramp", "backlog"], default="steady", help="see the docstring")
    parser.add_argument("--warmup-minutes", type=float, default=3, help="backlog: minutes run before the stop")
    parser.add_argument("--backlog-minutes", type=float, default=30, help="backlog: minutes stopped under load")
    parser.add_argument("--drain-timeout", type=int, default=900, help="seconds to wait for the job to catch up")
    parser.add_argument(
        "--checkpoint",
        choices=["local", "s3"],
        default="local",
        help="where the checkpoints go: the stack's directory, or S3 (the stack's own S3Proxy)",
    )
    parser.add_argument("--out", type=Path, help="where summary.json, minutes.csv, soak.png go")
    parser.add_argument("--keep", action="store_true", help="keep the stack's state directory and database")
    return parser.parse_args(argv)


def main() -> int:
    args = parse_args()
    out = args.out or REPO / "var" / "soak" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()} | {"out": str(out)}
    stack = Stack(keep=args.keep, checkpoint=args.checkpoint)
    producer: multiprocessing.process.BaseProcess | None = None
    try:
        log(f"starting the stack in {stack.var_dir}")
        stack.start()
        bootstrap = stack.env["KAFKA_BOOTSTRAP_SERVERS"]
        topic, table = f"soak-{uuid.uuid4().hex[:8]}", f"soak_{uuid.uuid4().hex[:8]}"
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(60)
        del admin  # its client would keep reconnecting, and logging it, once the stack stops
        kafka = stack.api("POST", "connections/kafka/", {"name": "soak kafka", "bootstrap_servers": bootstrap})
        clickhouse = stack.api(
            "POST",
            "connections/clickhouse/",
            {"name": "soak ch", "host": "127.0.0.1", "port": stack.ports["clickhouse"]},
        )
        spec = pipeline_spec(topic, table, window=args.window, time_mode=args.time)
        pipeline = stack.api(
            "POST",
            "pipelines/",
            {"name": "soak", "kafka_connection": kafka["id"], "clickhouse_connection": clickhouse["id"], "spec": spec},
        )
        context = multiprocessing.get_context("fork")  # no thread runs yet here
        stop = context.Event()
        sent, unique = context.Value("q", 0, lock=False), context.Value("q", 0, lock=False)
        producer = context.Process(
            target=produce_steadily,
            args=(bootstrap, topic, args.partitions, args.rate, args.dup_share, stop, sent, unique),
            daemon=True,
        )
        ramp = args.mode == "ramp"
        if not ramp:
            producer.start()
        producing_since = time.time()
        lead = 0 if ramp else args.lead_seconds
        log(f"producing {args.rate:,} events/s ({args.dup_share:.0%} re-sent); deploying in {lead} s")
        time.sleep(lead)  # the topic's recent rate is what the product sizes the job from
        # What the review step and the API's validation expect of the state, from the topic's recent rate.
        validation = stack.api("POST", f"pipelines/{pipeline['id']}/validate/", {})
        settings["expected_state"] = validation.get("estimated_state")
        settings["validation_warnings"] = [w["message"] for w in validation.get("warnings", [])]
        log(f"expected state: {json.dumps(settings['expected_state'])}; warnings: {settings['validation_warnings']}")
        stack.api("POST", f"pipelines/{pipeline['id']}/deploy/")
        log(f"deployed pipeline {pipeline['id']} (table {table}); waiting for its job to run")

        def running() -> bool:
            status = stack.api("GET", f"pipelines/{pipeline['id']}/status/")
            if status["status"] == "failed" and status.get("restart_at") is None:
                raise SystemExit(f"the pipeline failed before the load: {status['status_message']}")
            return status["status"] == "running"

        if not wait_until(running, timeout=START_TIMEOUT, interval=2.0):
            raise SystemExit("the pipeline's job did not start")
        if ramp:  # deployed on a quiet topic: the load comes now
            producer.start()
            producing_since = time.time()
            log(f"the job runs on a quiet topic; the load starts now: {args.rate:,} events/s")
        if args.mode == "backlog":
            log(f"the job runs; stopped in {args.warmup_minutes:g} min, for {args.backlog_minutes:g} min")
            time.sleep(60 * args.warmup_minutes)
            stack.api("POST", f"pipelines/{pipeline['id']}/stop/")
            if not wait_until(lambda: stack.api("GET", f"pipelines/{pipeline['id']}/status/")["status"] == "stopped",
                              timeout=START_TIMEOUT, interval=2.0):  # fmt: skip
                raise SystemExit("the pipeline did not stop")
            time.sleep(60 * args.backlog_minutes)
            log(f"resuming on a backlog of about {args.rate * 60 * args.backlog_minutes:,.0f} events")
            stack.api("POST", f"pipelines/{pipeline['id']}/resume/")
            if not wait_until(running, timeout=START_TIMEOUT, interval=2.0):
                raise SystemExit("the pipeline's job did not start again")
        sampler = Sampler(stack, pipeline["id"], table)
        started = time.time()
        log(f"the job runs; {args.minutes} minute(s) from now")
        samples: list[MinuteSample] = []
        try:
            measure_minutes(args, sampler, samples, started, sent, unique, out)
        except KeyboardInterrupt:  # Ctrl-C: the minutes so far still get their summary, CSV and plot
            log(f"interrupted after {len(samples)} minute(s): no catch-up, the rows are checked as they are")
            settings["interrupted_after_minutes"] = len(samples)
        stop.set()
        produced_for = time.time() - producing_since
        producer.join(timeout=180)
        total_unique = unique.value
        achieved = sent.value / produced_for
        log(
            f"produced {sent.value:,} events ({total_unique:,} unique): {achieved:,.0f} events/s achieved "
            f"of {args.rate:,}; waiting for the job to catch up"
        )
        deadline = time.monotonic() + (0 if "interrupted_after_minutes" in settings else args.drain_timeout)
        while (rows := sampler.rows()) < total_unique and time.monotonic() < deadline:
            status = stack.api("GET", f"pipelines/{pipeline['id']}/status/")
            if status["status"] == "failed" and status.get("restart_at") is None:
                log(f"the pipeline failed for good: {status['status_message'][:500]}")
                break
            log(f"{rows:,} of {total_unique:,} rows; pipeline {status['status']}")
            time.sleep(30)
        time.sleep(10)  # a few more micro-batches: anything written twice would show now
        count, distinct = sampler.clickhouse.query(f"SELECT count(), uniqExact(id) FROM `{table}`").result_rows[0]
        verdict = rows_verdict(rows=int(count), distinct_ids=int(distinct), unique_produced=total_unique)
        log(verdict.words)
        checkpoint = stack.checkpoint_where(pipeline["id"])
        log(f"the checkpoint ({args.checkpoint}): {json.dumps(checkpoint)}")
        summary = summarize(samples, verdict, settings)
        summary["checkpoint"] = checkpoint
        summary["checks"]["checkpoint_where_asked"] = checkpoint["ok"]
        summary["targets_met"] = summary["targets_met"] and checkpoint["ok"]
        runs = sampler.runs()
        run_fields = ("attempt", "driver_memory", "outcome", "cause", "reason", "log_path")
        summary["runs"] = [{k: r.get(k) for k in run_fields} for r in runs]  # oldest last; why each ended
        paths = write_outputs(out, samples, summary)
        print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=2))
        log("wrote " + ", ".join(str(p) for p in paths))
        return 0 if verdict.exact and checkpoint["ok"] else 1
    finally:
        if producer is not None and producer.is_alive():
            producer.terminate()
        copy_job_logs(stack.var_dir / "runs", out / "job-logs")
        log("stopping the stack")
        stack.stop()


def copy_job_logs(runs: Path, target: Path) -> None:
    """Every run's job log (a crash's cause), kept in --out: the stack's directory is removed at the end."""
    for job_log in sorted(runs.glob("*/*/job.log")):
        destination = target / f"{job_log.parent.name}.log"
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(job_log, destination)


if __name__ == "__main__":
    sys.exit(main())
