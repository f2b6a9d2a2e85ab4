"""What the web app, the worker and the job say to each other at run time, declared once.

Three kinds of process share names: the web app (Django), the worker (Celery: tasks, the reconciler, the job
processes) and the job (`spark_jobs.run`, on a Spark driver). This module is the one place that names

- the Celery tasks (`Task`): the web app sends them by name (`webapp.core.queue`), the worker defines them
  (`worker.tasks`) and schedules some (`worker.schedule`);
- the Redis keys: the job's metrics and heartbeat (written by the job, read by the worker and the web app), the
  job's log tail and the watcher's tick (written by the worker, read by the web app), the app's own counters
  (written by every web and worker process, read at `/metrics`);
- the files of a run directory (`RunFiles`): the spec file the worker writes, the log and exit code the job's
  wrapper (`worker.jobwrap`) writes, and the exit codes and the "started" line of `spark_jobs.run`;
- the metrics record (`BatchMetrics`): one per micro-batch, as JSON;
- which checkpoint locations are local directories (`local_checkpoint_path`): the job keeps files of its own in
  them, the worker deletes them on reset.

No Django, no Spark, nothing but the standard library: the job ships this module with `spark_jobs`.
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path

# -- Celery tasks -------------------------------------------------------------------------------------------


class Task(StrEnum):
    """Every Celery task, by the name it is registered and sent under."""

    PING = "clearflow.ping"
    # Pipelines (routed to settings.PIPELINE_QUEUE by the `clearflow.pipeline*` route).
    PIPELINE_RECONCILE = "clearflow.pipeline_reconcile"
    PIPELINES_WATCH = "clearflow.pipelines_watch"
    PIPELINE_JOB_DISCARD = "clearflow.pipeline_job_discard"
    # A column added for a new field, filled on the rows written before it from their events read again.
    PIPELINE_COLUMN_FILL = "clearflow.pipeline_column_fill"
    # Each deployed pipeline's lag read from its topics' brokers (the default queue, beside the watcher's: a
    # slow broker must not hold the watcher's tick).
    PIPELINES_LAG = "clearflow.lag_read"
    # Alerts (settings.ALERT_QUEUE).
    ALERTS_EVALUATE = "clearflow.alerts_evaluate"
    ALERT_DELIVER = "clearflow.alert_deliver"
    # The duplicate audit (the default queue).
    AUDITS_SCHEDULE = "clearflow.audits_schedule"
    AUDIT_TABLE_CHECK = "clearflow.audit_table_check"
    AUDIT_PIPELINE = "clearflow.audit_pipeline"  # a pipeline's query started: audit its table now if due
    ACTIVITY_PRUNE = "clearflow.activity_prune"  # the activity log keeps CLEARFLOW_ACTIVITY_DAYS days
    # Key advice and samples, read by the worker rather than on a web thread (the default queue).
    HEAVY_REQUEST_RUN = "clearflow.heavy_request_run"


# The glob that routes every pipeline task to the pipeline queue (Celery's `task_routes`).
PIPELINE_TASKS_ROUTE = "clearflow.pipeline*"

# -- Redis keys ---------------------------------------------------------------------------------------------
# `<job>` is the job's name: the spec's `name` in the job's spec file, `Pipeline.job_name` in the web app.

METRICS_KEY_PREFIX = "clearflow:metrics:"


def latest_key(job: str) -> str:
    """STRING: JSON of the latest `BatchMetrics` (written by the job)."""
    return f"{METRICS_KEY_PREFIX}{job}"


def recent_key(job: str) -> str:
    """LIST: JSON records, newest first, at most RECENT_LIMIT (written by the job)."""
    return f"{METRICS_KEY_PREFIX}{job}:recent"


def history_key(job: str) -> str:
    """SORTED SET: JSON records scored by the batch's start (unix ms), trimmed to HISTORY_MAX_RECORDS and
    HISTORY_MAX_AGE_S: the time series the API, the charts and the alerts read (written by the job)."""
    return f"{METRICS_KEY_PREFIX}{job}:history"


def totals_key(job: str) -> str:
    """HASH: running sums of TOTAL_FIELDS, `batches` and `since` (written by the job)."""
    return f"{METRICS_KEY_PREFIX}{job}:totals"


def counted_key(job: str) -> str:
    """STRING: JSON {"query": <query id>, "batches": [<batch id>, ...]}, the newest COUNTED_KEEP batch ids the
    totals hold, so a batch Spark runs again after a crash counts once (written by the job with the totals)."""
    return f"{METRICS_KEY_PREFIX}{job}:counted"


def heartbeat_key(job: str) -> str:
    """STRING: epoch seconds of the job's last progress or idle event, so the worker can tell a stalled job from
    an idle one (written by the job, read by the reconciler)."""
    return f"clearflow:heartbeat:{job}"


def lag_key(job: str) -> str:
    """SORTED SET: JSON `LagReading`s scored by when they were read (unix ms), trimmed to LAG_KEEP_SECONDS: the
    lag the tiles, the charts, `/metrics` and the alerts show (written by the worker, which reads the brokers'
    end offsets and the pipeline's committed offsets on its own schedule, so a slow or stuck job still shows it)."""
    return f"clearflow:lag:{job}"


def pace_key(job: str) -> str:
    """STRING: JSON of the pace judged on the last lag readings (`clearflow_spec.pace.Pace.to_dict()`, with `cause`
    and `cause_words` when it is behind), expiring after LAG_KEEP_SECONDS (written by the worker)."""
    return f"clearflow:pace:{job}"


def job_log_key(job: str) -> str:
    """STRING: the last lines of the job's log, secrets redacted (written by the worker, read by the web app,
    which may run on another host than the job)."""
    return f"clearflow:joblog:{job}"


# STRING: epoch seconds of the watcher's last tick (written by the worker, read by the health check).
WATCHER_TICK_KEY = "clearflow:watcher:tick"
# STRING with a TTL: "<host id> <pid>" of the one beat that sends the periodic tasks (worker.beat).
BEAT_LEADER_KEY = "clearflow:beat:leader"
# The environment variable naming a worker host (its runs' `host`, its jobs' leases); the host name when unset.
HOST_ID_ENV = "CLEARFLOW_HOST_ID"


def host_id() -> str:
    """This host's id: $CLEARFLOW_HOST_ID, else its host name. Two worker hosts need two ids."""
    return os.environ.get(HOST_ID_ENV) or socket.gethostname()


# HASHes of the app's own counts, `<label>\t<label>` -> count (every web and worker process adds to them).
HTTP_REQUESTS_KEY = "clearflow:app:http_requests"
CELERY_TASKS_KEY = "clearflow:app:celery_tasks"
COUNTER_LABEL_SEPARATOR = "\t"

RECENT_LIMIT = 100
# About 5.5 MB of Redis per pipeline at most (measured: 10,000 records with two partitions of lag): 2.8 hours
# at one batch per second, a week at one batch per minute.
HISTORY_MAX_RECORDS = 10_000
HISTORY_MAX_AGE_S = 7 * 24 * 3600
# Spark replays only the batch it was running; the margin costs a few hundred bytes.
COUNTED_KEEP = 100
# Six hours of lag readings: at one every 10 s, 2,160 readings of a few hundred bytes a pipeline.
LAG_KEEP_SECONDS = 6 * 3600
HEARTBEAT_EVERY_SECONDS = 5.0
HEARTBEAT_TTL_SECONDS = 24 * 3600
JOB_LOG_TTL_SECONDS = 7 * 24 * 3600

# -- a run directory ----------------------------------------------------------------------------------------


class RunFiles:
    """The files in a job's run directory (one directory per start of a job)."""

    SPEC = "spec.json"  # written by the worker (mode 0600: it holds secrets), removed when the job ends
    LOG = "job.log"  # the job's output, appended by its wrapper
    EXIT_CODE = "exit_code"  # written by the wrapper when the job ends
    # Written before the stack stops the job: the run ended because the stack stopped, not because the job failed
    # (the pipeline stays deployed and starts again with the stack).
    STOPPED_WITH_STACK = "stopped_with_stack"
    # A standby job (`spark_jobs.standby`): the Unix socket it waits on for its pipeline (in its run directory,
    # mode 0700, so only this user reaches it), and what the worker that started it wrote about it.
    CHANNEL = "standby.sock"
    STANDBY = "standby.json"
    # Written at the hand-off: the job name of the pipeline a standby took (its directory is not named after it).
    JOB_NAME = "job_name"


# Standby jobs live in this directory under the run root, one directory each.
STANDBY_DIR = "standby"


def local_checkpoint_path(checkpoint: str) -> Path | None:
    """The directory of a local checkpoint (a path or a file:// URI); None for a remote one (s3a://, hdfs://...),
    which only Spark's own file system layer reaches."""
    if "://" in checkpoint and not checkpoint.startswith("file://"):
        return None
    return Path(checkpoint.removeprefix("file://"))


@dataclass(frozen=True)
class Handoff:
    """What the worker sends a standby job over its channel (one JSON line): where the spec file is (0600, with
    the secrets: never in the message), the checkpoint, the trigger, and the Spark settings the run asks for.
    The standby answers one JSON line: {"accepted": true, "pid": <its supervisor>} or {"accepted": false,
    "reason": "..."}."""

    spec: str
    checkpoint: str
    trigger_interval: str
    driver_memory: str
    conf: tuple[str, ...] = ()  # KEY=VALUE, later ones win
    # A standby waits at its worker's CPU priority, so that a deploy's first micro-batch goes before the busy
    # jobs; after that batch the job lowers its priority by this much, to where a job started cold runs.
    niceness: int = 0
    # A light pipeline: after that batch the job also moves to the idle scheduling class (spark_jobs.cpu_priority).
    idle_after_first_batch: bool = False

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "conf": list(self.conf)})

    @classmethod
    def from_json(cls, text: str) -> Handoff:
        data = json.loads(text)
        return cls(**{**data, "conf": tuple(data.get("conf", ()))})


class ExitCode:
    """What `spark_jobs.run` exits with (the wrapper writes it to RunFiles.EXIT_CODE)."""

    STOPPED = 0  # stopped on request, or caught up (--available-now)
    FAILED = 1  # the query failed; the cause is logged
    INVALID_SPEC = 2  # the spec is invalid: a restart cannot help
    WRAPPER_FAILED = 70  # the wrapper itself failed to run the job
    LEASE_LOST = 75  # stopped because its lease could not be renewed (EX_TEMPFAIL: a restart may work)


# The line `spark_jobs.run` logs once the streaming query has started; the worker reads the application id
# from it to mark the run running.
STARTED_LINE = (
    "pipeline {name} started (query {query}, application {application}, checkpoint {checkpoint}, trigger {trigger})"
)
STARTED_LINE_RE = re.compile(r"pipeline \S+ started \(query [^,]+, application (\S+?),")
# One line per start-up step (runner: Python up; jvm: the driver JVM's start; session: SparkSession ready;
# query: the streaming query started), epoch seconds: deploy -> first row, step by step (bench/deploy_start.py).
TIMING_LINE = "start step {step} at {at:.3f}"
TIMING_LINE_RE = re.compile(r"start step (\w+) at ([0-9.]+)")

# -- the metrics record -------------------------------------------------------------------------------------

# The counts summed in `totals_key` (each a field of BatchMetrics).
TOTAL_FIELDS = ("input_rows", "duplicates_dropped", "rows_written", "dead_letters", "filtered_out")


# The JSON keys no field reads are looked for in one event in this many (by offset): `spark_jobs.field_watch`.
JSON_SAMPLE_EVERY = 16


@dataclass
class BatchMetrics:
    """One micro-batch, as the job publishes it (`spark_jobs.metrics`) and every reader reads it."""

    pipeline: str
    batch_id: int
    timestamp: str  # ISO 8601 UTC, when the micro-batch started
    input_rows: int
    duplicates_dropped: int
    rows_written: int
    dead_letters: int
    filtered_out: int
    batch_duration_ms: int
    # topic -> partition -> records behind what the batch was planned on (latestOffset - endOffset): 0 whenever a
    # batch reads all that was there when it was planned; the lag behind the topic now is `LagReading`'s.
    lag: dict[str, dict[str, int]] = field(default_factory=dict)
    total_lag: int = 0
    # topic -> partition -> the next offset to read once this batch is committed (Spark's endOffset): where the
    # pipeline stands, for a checkpoint the worker cannot read itself (s3a://, hdfs://).
    end_offsets: dict[str, dict[str, int]] = field(default_factory=dict)
    state_rows: int = 0
    state_memory_bytes: int = 0
    late_rows_dropped: int = 0
    input_rows_per_second: float = 0.0
    processed_rows_per_second: float = 0.0
    insert_ms_max: int = 0
    # Where the batch's time went (ms): Spark's phases (`durationMs` less the whole, `triggerExecution`) and the
    # state store's, summed over the stateful operators: state_commit, state_updates, state_removals and RocksDB's
    # rocksdb_flush, rocksdb_checkpoint, rocksdb_file_sync (its files' upload to the checkpoint's storage),
    # rocksdb_write_stall, rocksdb_compaction. What a slow batch waited for.
    phases_ms: dict[str, int] = field(default_factory=dict)
    query_id: str = ""  # Spark's query id: the same across restarts from one checkpoint, new after a reset
    # What the events carried (`spark_jobs.metrics.FIELDS_OBSERVATION`): Avro events per writer schema id; for
    # JSON, the keys no field covers seen in the sample, and how many sampled events there were and carried one
    # (sample: 1 in `sample_every` by offset).
    events_by_schema_id: dict[str, int] = field(default_factory=dict)
    unmapped_keys: list[str] = field(default_factory=list)
    sampled_events: int = 0
    sampled_with_unmapped: int = 0
    sample_every: int = JSON_SAMPLE_EVERY
    version: int = 1

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


@dataclass
class LagReading:
    """How far a pipeline is behind its topics at one moment, as the worker read it (`worker.lag`): the topics'
    end offsets now minus what the pipeline has committed, per partition, and the sums the pace is judged on."""

    t_ms: int  # when it was read (unix ms)
    total: int  # records behind, all partitions
    lag: dict[str, dict[str, int]] = field(default_factory=dict)  # topic -> partition -> records behind
    end_total: int = 0  # the topics' end offsets, summed: its growth is the rate events arrive at
    committed_total: int = 0  # the committed offsets, summed: its growth is the rate the pipeline reads at
    # Where the committed offsets came from: "checkpoint" (the offset log of the last committed batch), "batch"
    # (the last batch's metrics record), "start" (nothing committed yet: where the pipeline starts reading).
    position: str = "checkpoint"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> LagReading | None:
        try:
            data = json.loads(text)
            return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
        except (ValueError, TypeError):
            return None


__all__ = [
    "CELERY_TASKS_KEY",
    "COUNTED_KEEP",
    "COUNTER_LABEL_SEPARATOR",
    "HEARTBEAT_EVERY_SECONDS",
    "HEARTBEAT_TTL_SECONDS",
    "HISTORY_MAX_AGE_S",
    "HISTORY_MAX_RECORDS",
    "HTTP_REQUESTS_KEY",
    "JOB_LOG_TTL_SECONDS",
    "JSON_SAMPLE_EVERY",
    "LAG_KEEP_SECONDS",
    "METRICS_KEY_PREFIX",
    "PIPELINE_TASKS_ROUTE",
    "RECENT_LIMIT",
    "STANDBY_DIR",
    "STARTED_LINE",
    "STARTED_LINE_RE",
    "TIMING_LINE",
    "TIMING_LINE_RE",
    "TOTAL_FIELDS",
    "WATCHER_TICK_KEY",
    "BatchMetrics",
    "ExitCode",
    "Handoff",
    "LagReading",
    "RunFiles",
    "Task",
    "counted_key",
    "heartbeat_key",
    "history_key",
    "job_log_key",
    "lag_key",
    "latest_key",
    "pace_key",
    "recent_key",
    "totals_key",
]
