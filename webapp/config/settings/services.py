"""The systems ClearFlow talks to: Redis/Celery, the default Kafka and ClickHouse, Spark.

The Kafka and ClickHouse addresses here are the local stack's (and docker-compose's) defaults: the health
check watches them and the wizard offers them. Users' own clusters are saved as connections instead.
"""

from __future__ import annotations

import shlex

from clearflow_spec.protocol import PIPELINE_TASKS_ROUTE
from clearflow_spec.sizing import standby_pool_size, total_memory_bytes
from webapp.config.env import EnvError, env_bool, env_float, env_int, env_str, var_dir

VAR_DIR = var_dir()

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

KAFKA_BOOTSTRAP_SERVERS = env_str("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")

CLICKHOUSE_HOST = env_str("CLICKHOUSE_HOST", "127.0.0.1")
CLICKHOUSE_PORT = env_int("CLICKHOUSE_PORT", 8123)
CLICKHOUSE_USER = env_str("CLICKHOUSE_USER", "default")
CLICKHOUSE_PASSWORD = env_str("CLICKHOUSE_PASSWORD", "")

# The local stack's schema registry (Apicurio's Confluent-compatible API): reachable like the Kafka and
# ClickHouse above even when private networks are refused.
SCHEMA_REGISTRY_URL = env_str("SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081/apis/ccompat/v7")

# local[N] runs the job in the worker's machine; spark://host:7077 submits to a cluster.
SPARK_MASTER = env_str("SPARK_MASTER", "local[2]")

# Running pipelines (the worker). Checkpoints: on a cluster (spark://...) this must be storage that every host
# that may run a driver, and every executor (they write the dedup state), sees: a shared filesystem path, hdfs://
# or s3a://.
CLEARFLOW_CHECKPOINT_ROOT = env_str("CLEARFLOW_CHECKPOINT_ROOT", str(VAR_DIR / "checkpoints"))
# Per-run directories (spec file while the job runs, its log, its exit code) on the worker's host.
CLEARFLOW_RUN_ROOT = env_str("CLEARFLOW_RUN_ROOT", str(VAR_DIR / "runs"))
# The Celery queue the pipeline tasks (start, stop, watch) go to; health checks that someone consumes it.
PIPELINE_QUEUE = env_str("CLEARFLOW_PIPELINE_QUEUE", "pipelines")
PIPELINE_WATCH_INTERVAL_SECONDS = env_float("CLEARFLOW_WATCH_INTERVAL", 5.0)
# How often the worker reads every deployed pipeline's lag from the brokers and judges its pace (worker.lag).
PIPELINE_LAG_INTERVAL_SECONDS = env_float("CLEARFLOW_LAG_INTERVAL", 10.0)
# A running job is judged for a re-size (clearflow_spec.pace.resize_for) once it has run this long.
PIPELINE_RESIZE_SETTLE_SECONDS = env_float("CLEARFLOW_RESIZE_SETTLE", 60.0)
# Graceful stop (SIGTERM: the job finishes its micro-batch) is forced (SIGKILL, the batch is replayed) after this.
PIPELINE_STOP_TIMEOUT_SECONDS = env_float("CLEARFLOW_STOP_TIMEOUT", 60.0)
# A running job that published no heartbeat (a progress or idle event) for this long is failed.
PIPELINE_HEARTBEAT_TIMEOUT_SECONDS = env_float("CLEARFLOW_HEARTBEAT_TIMEOUT", 300.0)
# A job that has not reached "running" (Spark up, query started) within this long is failed.
PIPELINE_START_TIMEOUT_SECONDS = env_float("CLEARFLOW_START_TIMEOUT", 600.0)
# Automatic restarts after a failure: base * 2^(n-1) seconds, capped; at most N in the window, then it stays failed.
PIPELINE_RESTART_BACKOFF_SECONDS = env_float("CLEARFLOW_RESTART_BACKOFF", 5.0)
PIPELINE_RESTART_BACKOFF_MAX_SECONDS = env_float("CLEARFLOW_RESTART_BACKOFF_MAX", 300.0)
PIPELINE_RESTART_MAX_ATTEMPTS = env_int("CLEARFLOW_RESTART_MAX_ATTEMPTS", 5)
PIPELINE_RESTART_WINDOW_SECONDS = env_float("CLEARFLOW_RESTART_WINDOW", 3600.0)
# Restarts stop early when this many runs in a row died of the same cause that stays until something is changed
# (out of memory, a state too large to load, a missing table, refused credentials: clearflow_spec.failures).
PIPELINE_SAME_CAUSE_LIMIT = env_int("CLEARFLOW_SAME_CAUSE_LIMIT", 3)
# Workers on other hosts watch a job through its lease in Redis (worker.leases), renewed by the job's supervisor;
# a job that cannot renew it for half this time stops itself, and one whose lease expired counts as lost.
PIPELINE_LEASE_SECONDS = env_float("CLEARFLOW_JOB_LEASE", 120.0)
if PIPELINE_LEASE_SECONDS < 3:  # renewed every sixth of it: shorter would stop jobs on every slow renewal
    raise EnvError(f"CLEARFLOW_JOB_LEASE must be at least 3 (seconds), got {PIPELINE_LEASE_SECONDS:g}")
# Beat is reported down when its last tick (a Redis key the watcher sets) is older than this.
PIPELINE_BEAT_STALE_SECONDS = env_float("CLEARFLOW_BEAT_STALE", 60.0)
# Every worker host may run beat; the one holding this lease in Redis sends (worker.beat). A dead holder's lease
# expires after this many seconds, and another host's beat takes over.
CLEARFLOW_BEAT_LEASE_SECONDS = env_float("CLEARFLOW_BEAT_LEASE", 15.0)
CELERY_BEAT_SCHEDULER = "worker.beat.LeaderScheduler"
# Each job's driver: memory and local cores (local mode), and extra Spark settings / spark-submit arguments
# (e.g. `--jars a.jar,b.jar` for connectors on a cluster). Never put secrets here: they end up on a command line.
# "auto": sized from the pipeline's expected dedup state (clearflow_spec.sizing), with RocksDB's memory bound beside it;
# a size ("2g") overrides the heap for every job.
SPARK_DRIVER_MEMORY = env_str("CLEARFLOW_DRIVER_MEMORY", "auto")
# What one job may take in memory (its expected RSS is checked against it before deploy); empty: the machine's RAM.
JOB_MEMORY_LIMIT = env_str("CLEARFLOW_JOB_MEMORY_LIMIT", "")
# Both are split like a shell does: CLEARFLOW_SPARK_CONF="spark.a=1 spark.b=2".
SPARK_JOB_CONF = shlex.split(env_str("CLEARFLOW_SPARK_CONF", ""))
SPARK_SUBMIT_ARGS = shlex.split(env_str("CLEARFLOW_SPARK_SUBMIT_ARGS", ""))
# "auto": sized from the pipeline's expected rate (clearflow_spec.sizing.trigger_interval); an interval ("2 seconds")
# sets it for every job.
SPARK_TRIGGER_INTERVAL = env_str("CLEARFLOW_TRIGGER_INTERVAL", "auto")
# Each job's Spark web UI (port 4040 and up): off by default, it slows every job's start; 1 turns it on.
SPARK_UI_ENABLED = env_bool("CLEARFLOW_SPARK_UI", False)
# Standby jobs (worker.standby): a pool of job processes per worker host that wait with their JVM and Spark
# session up, so a deploy skips their start (seconds to the first row); about 0.7-1.0 GB of memory each while they
# wait. "auto": sized from the host's memory (clearflow_spec.sizing.standby_pool_size: 4 on 24 GiB); a number sets it;
# 0: none. A deploy that finds every standby still starting waits for one (up to CLEARFLOW_STANDBY_WAIT seconds).
PIPELINE_STANDBY_JOBS = (
    standby_pool_size(total_memory_bytes())
    if env_str("CLEARFLOW_STANDBY", "auto").strip().lower() == "auto"
    else env_int("CLEARFLOW_STANDBY", 1)
)
# The CPU priority of job processes (their niceness, 0-19): above 0, the web app, the API, the workers and the
# stack's services (broker, ClickHouse, databases) come first when jobs want more CPU than the host has, so the UI
# answers and the jobs' own broker and ClickHouse keep up; a job alone on a host still gets every idle core.
PIPELINE_JOB_NICENESS = env_int("CLEARFLOW_JOB_NICENESS", 10)
# A light pipeline's job (clearflow_spec.sizing.is_light: at most 1,000 events/s and 3.6M keys), once its first
# micro-batch is done, runs in Linux's idle CPU class: the host's services, busy pipelines and a new deploy's first
# batch go first, and light jobs share what they leave (spark_jobs.cpu_priority says why and what it costs).
# 0: they keep the niceness.
PIPELINE_LIGHT_JOBS_IDLE = env_bool("CLEARFLOW_LIGHT_JOBS_IDLE", True)
# A standby still starting is ahead of a cold start, which would begin a JVM from nothing at the same priority: a
# deploy waits for it while it is alive, at most this long (at load 29 on 2 cores a deploy that gave up after 45 s
# started cold and had its first row after 145 s; the standby it gave up on served the next deploy in 32 s).
PIPELINE_STANDBY_WAIT_SECONDS = env_float("CLEARFLOW_STANDBY_WAIT", 300.0)

CELERY_TASK_ROUTES = {PIPELINE_TASKS_ROUTE: {"queue": PIPELINE_QUEUE}}
CELERY_TASK_DEFAULT_QUEUE = "celery"

# Alerts (docs/alerts.md). The beat task evaluates every rule this often; each delivery is its own task on
# ALERT_QUEUE, retried on timeouts, connection errors, HTTP 5xx/429 and SMTP 4xx: after about
# backoff * 2^n seconds (randomized, capped), at most ALERT_DELIVERY_MAX_RETRIES times.
ALERT_EVALUATE_INTERVAL_SECONDS = env_float("CLEARFLOW_ALERT_INTERVAL", 30.0)
ALERT_QUEUE = env_str("CLEARFLOW_ALERT_QUEUE", "celery")
ALERT_RETRY_BACKOFF_SECONDS = env_int("CLEARFLOW_ALERT_RETRY_BACKOFF", 10)
ALERT_RETRY_BACKOFF_MAX_SECONDS = env_int("CLEARFLOW_ALERT_RETRY_BACKOFF_MAX", 600)
ALERT_DELIVERY_MAX_RETRIES = env_int("CLEARFLOW_ALERT_MAX_RETRIES", 6)
ALERT_HTTP_TIMEOUT_SECONDS = env_float("CLEARFLOW_ALERT_HTTP_TIMEOUT", 10.0)
# Links in alerts point here (e.g. https://clearflow.example.com); unset, alerts carry no link.
CLEARFLOW_BASE_URL = env_str("CLEARFLOW_BASE_URL", "")

# Email (alert channels): SMTP when EMAIL_HOST is set (production), else each message is written as a file under
# var/mail (a safe local default: nothing leaves the machine).
EMAIL_HOST = env_str("EMAIL_HOST", "")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "ClearFlow <clearflow@localhost>")
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.filebased.EmailBackend",
)
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH", str(VAR_DIR / "mail"))

# Duplicate audits (webapp.audits): how often the beat checks every audited table, how long one check may run
# on the ClickHouse server (its max_execution_time), and how long results are kept.
AUDIT_INTERVAL_SECONDS = env_float("CLEARFLOW_AUDIT_INTERVAL", 300.0)
AUDIT_MAX_EXECUTION_SECONDS = env_int("CLEARFLOW_AUDIT_MAX_EXECUTION", 120)
# The check reads at most this many rows a second (ClickHouse's max_execution_speed; 0: no limit). Unthrottled, a
# full 1-hour window at 20k events/s (72M keys) takes both cores of a 2-core machine for ~4 s every round, and the
# pipelines writing to that server wait for it; throttled it takes ~0.15 cores for ~36 s. So
# AUDIT_MAX_EXECUTION_SECONDS must cover a window's rows divided by this rate.
AUDIT_MAX_ROWS_PER_SECOND = env_int("CLEARFLOW_AUDIT_MAX_ROWS_PER_SECOND", 2_000_000)
# A check that meets a transient ClickHouse error (network, overload) is retried after this, doubling, 3 times.
AUDIT_RETRY_DELAY_SECONDS = env_float("CLEARFLOW_AUDIT_RETRY_DELAY", 5.0)
AUDIT_RESULT_RETENTION_DAYS = env_int("CLEARFLOW_AUDIT_RETENTION_DAYS", 30)
# The activity log (webapp.activity): who did what, kept this many days (pruned hourly by the beat).
ACTIVITY_RETENTION_DAYS = env_int("CLEARFLOW_ACTIVITY_DAYS", 365)
