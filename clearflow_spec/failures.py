"""Why a pipeline's job died, in words: `classify(text, exit_code)` reads the job's exception text and/or the tail
of its log and names a cause with a stable code, what happened and what to change.

Pure Python (no Spark, no Django): the runner (`spark_jobs.run`) uses `root_line` for its own error line, and the
worker (`worker.reconciler`) stores the cause of every failed run, shows its words on the pipeline page, in the
API and in the pipeline-failed alert, and stops restarting a job that keeps dying of the same cause.

The patterns are Spark 4.2's error classes (`error/error-conditions.json` in spark-common-utils, the Kafka
connector's `error/kafka-error-conditions.json`), the JVM's and the Kafka client's exception names, and the
messages of `spark_jobs.sink.ClickHouseWriteError`. The first rule that matches wins: the specific ones come first
(a state that cannot load because of memory is a state problem, not just "out of memory").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clearflow_spec.protocol import ExitCode
from clearflow_spec.sizing import LIGHT_DRIVER_HEAP_MB

# The stable codes (stored with each failed run, returned by the API; never rename one).
OUT_OF_MEMORY = "out_of_memory"
DRIVER_MEMORY_TOO_SMALL = "driver_memory_too_small"
KILLED = "killed"
STATE_TOO_LARGE = "state_too_large"
STATE_UNREADABLE = "state_unreadable"
CHECKPOINT_MISMATCH = "checkpoint_mismatch"
KAFKA_UNREACHABLE = "kafka_unreachable"
KAFKA_TOPIC_MISSING = "kafka_topic_missing"
KAFKA_AUTH = "kafka_auth"
KAFKA_DATA_LOST = "kafka_data_lost"
CLICKHOUSE_UNREACHABLE = "clickhouse_unreachable"
CLICKHOUSE_TABLE = "clickhouse_table"
CLICKHOUSE_AUTH = "clickhouse_auth"
CLICKHOUSE_ERROR = "clickhouse_error"
INVALID_SPEC = "invalid_spec"
LEASE_LOST = "lease_lost"
DISK_FULL = "disk_full"  # the disk under the job's checkpoint (or its local state) had no space left
STALLED = "stalled"  # the worker killed it: no heartbeat, or no start in time (its words say which)
LOST = "lost"  # its host stopped renewing the job's lease
CHECKPOINT_STORE_DENIED = "checkpoint_store_denied"  # S3 refused the checkpoint's reads or writes
CHECKPOINT_STORE_MISSING = "checkpoint_store_missing"  # the checkpoint's bucket does not exist
CHECKPOINT_STORE_FAILING = "checkpoint_store_failing"  # S3 answered 5xx (overloaded or failing) to the checkpoint
UNKNOWN = "unknown"

# Spark's JVM exits with this when a thread dies of OutOfMemoryError (SparkExitCode.OOM), e.g. under spark-submit.
SPARK_OOM_EXIT = 52

# Where the job's memory is set (webapp/config/settings/services.py, docker-compose.yml).
MEMORY_SETTING = "CLEARFLOW_DRIVER_MEMORY"
LIMIT_SETTING = "CLEARFLOW_JOB_MEMORY_LIMIT"
# RocksDB's memory bound, sized from the expected state (clearflow_spec.sizing.rocksdb_memory_mb).
ROCKSDB_BOUND = "maxMemoryUsageMB"


@dataclass(frozen=True)
class Cause:
    code: str
    what: str  # what happened, one sentence
    change: str  # what to change, one sentence ("" when there is nothing to advise)
    detail: str = ""  # the log line it was recognised by (shortened), for the curious

    @property
    def words(self) -> str:
        """What a person reads: what happened, then what to change."""
        return f"{self.what} {self.change}".strip()

    @property
    def restart_helps(self) -> bool:
        """Whether restarting the same job with the same spec and settings may get past it."""
        return self.code not in (INVALID_SPEC, CHECKPOINT_MISMATCH, DRIVER_MEMORY_TOO_SMALL)

    @property
    def repeats_count(self) -> bool:
        """Whether restarts that keep dying of this cause should stop early: a cause that stays until something
        is changed. Not a service that is down (it comes back: the ordinary restart limit and backoff apply), nor
        a kill or an error not recognised (two of those need not be the same)."""
        return self.code in _PHRASES

    @property
    def phrase(self) -> str:
        """The cause in a few words, for "stopped restarting: <phrase> 3 times in a row"."""
        return _PHRASES.get(self.code, "the job failed")


# The causes that stay until something is changed, told in a few words.
_PHRASES = {
    OUT_OF_MEMORY: "the job ran out of memory",
    DRIVER_MEMORY_TOO_SMALL: "the job's heap was below Spark's minimum",
    STATE_TOO_LARGE: "the dedup state did not fit in the job's memory",
    STATE_UNREADABLE: "the dedup state could not be loaded",
    KAFKA_TOPIC_MISSING: "the Kafka topic was missing",
    KAFKA_AUTH: "Kafka refused the job's credentials",
    KAFKA_DATA_LOST: "events were missing from Kafka",
    CLICKHOUSE_TABLE: "the ClickHouse table was missing",
    CLICKHOUSE_AUTH: "ClickHouse refused the job's credentials",
    CLICKHOUSE_ERROR: "ClickHouse refused the write",
    CHECKPOINT_STORE_DENIED: "S3 refused the checkpoint",
    CHECKPOINT_STORE_MISSING: "the checkpoint's bucket was missing",
}


# A line that is only the frame of an error, never its cause.
_NOISE = re.compile(
    r"^\s*(Traceback \(most recent call last\):|at [\w$.<>/]+\(|\.\.\. \d+ more|File \"|Caused by:\s*$|\^+$|"
    r"raise |return |~+\^*~*$|clearflow: job)"
)
_LOG_PREFIX = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+|\d\d/\d\d/\d\d \d\d:\d\d:\d\d) (ERROR|WARN|INFO)\s+\S+:?\s"
)
_RUNNER_ERROR = " ERROR clearflow.run "
_ERROR_WORDS = re.compile(r"(Error|Exception|ERROR|error|failed|refused|denied|\[[A-Z_.]{6,}\])")


def _memory_advice(memory: str | None, *, state: bool) -> str:
    # The dedup state is always in RocksDB, off the heap and with bounded memory (clearflow_spec.sizing): what a job
    # takes is its heap plus that bound plus the processes' own memory, the "job memory" of its expected state.
    now = f"; it ran with {memory}" if memory else ""
    advice = (
        f"Give the job more memory ({MEMORY_SETTING}{now}), make sure the machine or container holds the job memory "
        f"of the pipeline's expected dedup state (its heap plus RocksDB's bound, {ROCKSDB_BOUND}; {LIMIT_SETTING} "
        "says what one job may take), or choose a shorter dedup window"
    )
    if state:
        return f"{advice}; starting from a new checkpoint also gets it running but loses the window's state."
    return f"{advice}."


def _find(patterns: tuple[str, ...], text: str) -> str | None:
    """The last log line holding one of `patterns` (case-sensitive substrings), shortened; None if none does."""
    found = None
    for line in text.splitlines():
        if any(p in line for p in patterns):
            found = line
    return None if found is None else _shorten(_strip_prefix(found))


def _find_re(pattern: re.Pattern[str], text: str) -> str | None:
    found = None
    for line in text.splitlines():
        if pattern.search(line):
            found = line
    return None if found is None else _shorten(_strip_prefix(found))


def _strip_prefix(line: str) -> str:
    line = _LOG_PREFIX.sub("", line.strip())
    return line.split(_RUNNER_ERROR, 1)[-1]


def _shorten(line: str, limit: int = 300) -> str:
    line = re.sub(r"\?[^ ]{40,}", "?…", line)  # ClickHouse URLs carry every query setting
    return line if len(line) <= limit else line[: limit - 1] + "…"


# Spark refuses to create its context when the driver's JVM has less heap than it reserves for itself (1.5 times
# 300 MB): "[INVALID_DRIVER_MEMORY] System memory 402653184 must be at least 471859200. ..." (UnifiedMemoryManager).
_DRIVER_MEMORY = re.compile(r"INVALID_DRIVER_MEMORY\]?\s*System memory (\d+) must be at least (\d+)")
_OOM = ("java.lang.OutOfMemoryError", "OutOfMemoryError:", "GC overhead limit exceeded", "Java heap space")
_CONTAINER_OOM = re.compile(
    r"(Container killed .*(memory|OOM)|exceeding (physical )?memory limits|OOMKilled|"
    r"Killed process \d+ .*out of memory)"
)
_DISK_FULL = ("No space left on device", "ENOSPC", "Disk quota exceeded")
_STATE_OOM = ("HDFS_STORE_PROVIDER_OUT_OF_MEMORY", "ROCKSDB_STORE_PROVIDER_OUT_OF_MEMORY")
_STATE_UNREADABLE = ("CANNOT_LOAD_STATE_STORE", "CANNOT_WRITE_STATE_STORE", "STATE_STORE_ROW_CHECKSUM_VERIFICATION")
_CHECKPOINT = (
    "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
    "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
    "STATE_STORE_COLUMN_FAMILY_SCHEMA_INCOMPATIBLE",
    "STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION",
    "STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE",
    "STATE_STORE_INVALID_CONFIG_AFTER_RESTART",
    "STATE_STORE_VALUE_SCHEMA_EVOLUTION_THRESHOLD_EXCEEDED",
    "STATE_STORE_STATE_SCHEMA_FILES_THRESHOLD_EXCEEDED",
    "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
    "state of an earlier ClearFlow engine",  # spark_jobs.checkpoint_state.CheckpointMismatch (dedup or join state)
    "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
    "STREAMING_CHECKPOINT_MISSING_METADATA_FILE",
    "INVALID_CHECKPOINT",
    "Provided schema doesn't match",
    "schema does not match existing",
    "schema is not compatible",
    "StateSchemaNotCompatible",
    "IncompatibleSchemaException",
)
# Hadoop's S3A file system: "java.nio.file.AccessDeniedException: s3a://bucket/key: getFileStatus on ... (Service:
# S3, Status Code: 403, ...)"; a missing bucket: "UnknownStoreException: s3a://bucket/...: ... NoSuchBucket".
_S3_DENIED = re.compile(r"AccessDeniedException: s3a://([^/\s:]+)|s3a://([^/\s:]+)\S*: .*Status Code: 403")
# A store failing requests after S3A's retries (S3's 500 InternalError, 503 SlowDown): "AWSStatus500Exception: Writing
# Object on prefix/state/0/0/...: ... (Service: S3, Status Code: 500, ...)".
_S3_FAILING = re.compile(r"\(Service: S3, Status Code: (5\d\d)")
_S3_NO_BUCKET = re.compile(
    r"(?:UnknownStoreException|NoSuchBucket).*?s3a://([^/\s:]+)|s3a://([^/\s:]+)\S*: .*NoSuchBucket"
)
_KAFKA_TOPIC = ("UnknownTopicOrPartition", "UNKNOWN_TOPIC_OR_PARTITION")
_KAFKA_AUTH = (
    "SaslAuthenticationException",
    "SslAuthenticationException",
    "TopicAuthorizationException",
    "GroupAuthorizationException",
    "ClusterAuthorizationException",
    "AuthenticationException",
)
_KAFKA_UNREACHABLE = (
    "Failed to construct kafka consumer",
    "Failed to construct kafka producer",
    "kafka.common.errors.TimeoutException",
    "Timed out waiting for a node assignment",
    "Timeout of 60000ms expired before",
    "Connection to node -1",
    "Bootstrap broker",
    "No resolvable bootstrap urls",
    "KafkaException:",
    "kafka.common.errors.",
)
_CLICKHOUSE = "ClickHouseWriteError"
_CH_AUTH = re.compile(r"(Code: (516|192|193|194)\b|AUTHENTICATION_FAILED|Authentication failed|password is incorrect)")
_CH_TABLE = re.compile(
    r"(Code: (60|81|16|47)\b|UNKNOWN_TABLE|UNKNOWN_DATABASE|NO_SUCH_COLUMN|does not exist \(create_table is false\)|"
    r"has no column\(s\)|Table \S+ does(n't| not) exist)"
)
_OUR_TABLE_CHECK = re.compile(r"table \S+ (does not exist \(create_table is false\)|has no column\(s\) )")
# spark_jobs.sink.with_retries' messages: "<what> failed: <error>".
_OUR_CLICKHOUSE_STEP = re.compile(
    r"\b(creating table \S+|reading the columns of \S+|insert into \S+)( \([^)]*\))? failed: "
)
_CH_UNREACHABLE = re.compile(
    r"(Connection refused|Failed to establish a new connection|Max retries exceeded|timed out|Name or service not "
    r"known|Temporary failure in name resolution|No route to host|Connection reset|RemoteDisconnected)"
)


@dataclass(frozen=True)
class DiskSpace:
    """Where the job's checkpoints are written and how much room is left there now (None: not a local disk)."""

    path: str
    free_mb: float | None


def classify(
    text: str, exit_code: int | None = None, *, memory: str | None = None, disk: DiskSpace | None = None
) -> Cause:
    """The cause of a job's end, from its exception text or log tail and its exit code (None: killed or lost).

    `memory` is the heap the job ran with, quoted in the advice when it ran out of memory; `disk` the checkpoint
    root's free space, quoted when the disk was full."""
    text = text or ""
    if (line := _find(_DISK_FULL, text)) and "ClickHouse" not in line:  # not ClickHouse's own disk (its error 243)
        return disk_full(line, disk)
    if exit_code == ExitCode.INVALID_SPEC:
        line = _spec_problem(text)
        return Cause(
            INVALID_SPEC,
            f"The pipeline's spec is not valid, so the job did not start{': ' + line if line else '.'}",
            "Correct the spec (the pipeline's edit page or the API's validate call says what is wrong) and deploy "
            "again.",
            line or "",
        )
    if exit_code == ExitCode.LEASE_LOST:
        return Cause(
            LEASE_LOST,
            "The job stopped itself: it could not renew its lease in Redis, so a worker on another host may have "
            "taken the pipeline over.",
            "Check that the job's host reaches Redis; it restarts on its own.",
        )
    runner = _runner_error(text)
    cause = (_match(runner, memory) if runner else None) or _match(text, memory)
    if cause is not None:
        return cause
    if exit_code == SPARK_OOM_EXIT and not runner:
        return Cause(
            OUT_OF_MEMORY,
            f"The job ran out of memory (Spark's JVM exited with code {SPARK_OOM_EXIT}, its out-of-memory exit).",
            _memory_advice(memory, state=False),
        )
    if exit_code in (137, -9) and not runner:
        return Cause(
            OUT_OF_MEMORY,
            f"The job was killed (exit code {exit_code}, SIGKILL) without an error of its own: most often the "
            "machine's or container's memory limit (the OOM killer).",
            _memory_advice(memory, state=False),
        )
    if exit_code is None and not runner:
        return Cause(KILLED, "The job was killed or lost (no exit code).", "It restarts on its own.")
    return Cause(UNKNOWN, _unknown_what(text, exit_code), "")


def _match(text: str, memory: str | None) -> Cause | None:
    """The cause `text` names, if any of the rules recognises it."""
    if line := _find_re(_DRIVER_MEMORY, text):
        return _driver_memory_too_small(line, memory)
    if line := _find(_STATE_OOM, text):
        return Cause(
            STATE_TOO_LARGE,
            "The dedup state in the checkpoint could not be loaded back: it does not fit in the job's memory.",
            _memory_advice(memory, state=True),
            line,
        )
    if line := _find(_CHECKPOINT, text):
        return Cause(
            CHECKPOINT_MISMATCH,
            "The checkpoint no longer fits the spec: its dedup state was written for another key, dedup settings or "
            "state store than the version being run.",
            "Deploy the version that wrote the checkpoint again, or start from a new checkpoint (Reset checkpoint: "
            "the dedup window's state is lost, the rows in ClickHouse stay).",
            line,
        )
    if line := _find_re(_S3_FAILING, text):  # before the state's own words: a state write it refused says both
        status = _S3_FAILING.search(text).group(1)  # type: ignore[union-attr]
        return Cause(
            CHECKPOINT_STORE_FAILING,
            f"S3 failed the checkpoint's requests (it answered {status} after retries): the store under "
            "CLEARFLOW_CHECKPOINT_ROOT was overloaded or failing, and the micro-batch in flight was not committed.",
            "Nothing is lost or written twice: the job restarts on its own from its last committed micro-batch. If "
            "it keeps failing, check the object store's health and CLEARFLOW_S3_ENDPOINT.",
            line,
        )
    if line := _find(_STATE_UNREADABLE, text):
        return Cause(
            STATE_UNREADABLE,
            "The dedup state in the checkpoint could not be loaded: its files are missing, damaged or from another "
            "Spark version.",
            "Check that the checkpoint storage (CLEARFLOW_CHECKPOINT_ROOT) is complete and reachable; if it is "
            "lost, start from a new checkpoint (the dedup window's state is lost, the rows in ClickHouse stay).",
            line,
        )
    if line := _find_re(_S3_DENIED, text):
        bucket = next(filter(None, _S3_DENIED.search(line).groups()))  # type: ignore[union-attr]
        return Cause(
            CHECKPOINT_STORE_DENIED,
            f"S3: access denied to bucket {bucket}: the job cannot read or write its checkpoint there.",
            "Give the worker hosts keys (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or an instance role that may "
            f"list, read, write and delete objects in {bucket}, or point CLEARFLOW_CHECKPOINT_ROOT at a bucket "
            "they may write; the job restarts on its own.",
            line,
        )
    if line := _find_re(_S3_NO_BUCKET, text):
        bucket = next(filter(None, _S3_NO_BUCKET.search(line).groups()))  # type: ignore[union-attr]
        return Cause(
            CHECKPOINT_STORE_MISSING,
            f"S3: the bucket {bucket} of the checkpoint does not exist.",
            f"Create the bucket {bucket}, or point CLEARFLOW_CHECKPOINT_ROOT at an existing one.",
            line,
        )
    if line := _find(_OOM, text) or _find_re(_CONTAINER_OOM, text):
        return Cause(OUT_OF_MEMORY, "The job ran out of memory.", _memory_advice(memory, state=False), line)
    if _CLICKHOUSE in text:
        # ClickHouse's own message follows the driver's line ("... received ClickHouse error code 516\n Code: ...").
        after = text[text.rindex(_CLICKHOUSE) :].splitlines()[:3]
        return _clickhouse(_shorten(" ".join(line.strip() for line in after if not _NOISE.match(line)), 500))
    if line := _find_re(_OUR_CLICKHOUSE_STEP, text):  # the sink's retried steps, logged without the class name
        return _clickhouse(line[_OUR_CLICKHOUSE_STEP.search(line).start() :])  # type: ignore[union-attr]
    if line := _find_re(_OUR_TABLE_CHECK, text):  # the sink's own check at start (its message without its class)
        return _clickhouse(line[_OUR_TABLE_CHECK.search(line).start() :])  # type: ignore[union-attr]
    if line := _find(_KAFKA_TOPIC, text):
        return Cause(
            KAFKA_TOPIC_MISSING,
            "The Kafka topic does not exist (or the broker does not show it to this user).",
            "Create the topic, or correct the topic name in the spec.",
            line,
        )
    if line := _find(("KAFKA_DATA_LOSS",), text):
        return Cause(
            KAFKA_DATA_LOST,
            "Events the checkpoint points at are no longer in Kafka (aged out by retention, or the topic was "
            "recreated): reading on would skip them.",
            "Raise the topic's retention, or start from a new checkpoint to read from the spec's starting offsets.",
            line,
        )
    if line := _find(_KAFKA_AUTH, text):
        return Cause(
            KAFKA_AUTH,
            "Kafka refused the job's credentials or permissions.",
            "Check the Kafka connection's user, password, mechanism and certificates, and the user's ACLs on the "
            "topic (the connection's Test button tells which).",
            line,
        )
    if line := _find(_KAFKA_UNREACHABLE, text):
        return Cause(
            KAFKA_UNREACHABLE,
            "The Kafka brokers could not be reached.",
            "Check that the brokers run and that the Kafka connection's bootstrap servers and security settings are "
            "right (the connection's Test button checks them); the job restarts on its own.",
            line,
        )
    return None


def disk_full(line: str, disk: DiskSpace | None) -> Cause:
    """'Disk full under /var/clearflow/checkpoints: 0 MB free.' and what to do."""
    where = disk.path if disk is not None else "the checkpoint root (CLEARFLOW_CHECKPOINT_ROOT)"
    free = f": {disk.free_mb:.0f} MB free" if disk is not None and disk.free_mb is not None else ""
    return Cause(
        DISK_FULL,
        f"Disk full under {where}{free}. The job could not write its checkpoint or dedup state.",
        "Free space on that disk (or move CLEARFLOW_CHECKPOINT_ROOT to a larger one): the pipeline restarts on its "
        "own once there is room, from its last checkpoint, so no event is lost or written twice.",
        line,
    )


def _driver_memory_too_small(line: str, memory: str | None) -> Cause:
    """Spark did not start: the JVM's heap (what it reports, a little under the heap asked for) is below the
    floor Spark reserves for itself. No restart helps until the job gets more."""
    line = line.lstrip(": ")  # Py4J's line puts the JVM's exception after ": "
    found = _DRIVER_MEMORY.search(line)
    assert found is not None
    has, needs = (int(value) // (1024 * 1024) for value in found.groups())
    asked = f" ({memory} asked for)" if memory else ""
    return Cause(
        DRIVER_MEMORY_TOO_SMALL,
        f"Spark refused to start the job: its JVM had {has} MB of heap{asked} and Spark needs at least {needs} MB.",
        f"Give the job a larger heap: set {MEMORY_SETTING} to at least {LIGHT_DRIVER_HEAP_MB}m (or to auto, which "
        "sizes it from the pipeline's rate and state), restart the worker, and deploy the pipeline again.",
        line,
    )


def _clickhouse(line: str) -> Cause:
    if _CH_AUTH.search(line):
        return Cause(
            CLICKHOUSE_AUTH,
            "ClickHouse refused the job's user or password.",
            "Check the ClickHouse connection's user and password, and the user's grants on the table.",
            line,
        )
    if _CH_TABLE.search(line):
        return Cause(
            CLICKHOUSE_TABLE,
            "The ClickHouse table (or a column of it) the spec writes to does not exist.",
            "Create the table (or let the pipeline create it: sink.create_table), or correct the table and the "
            "field mapping in the spec.",
            line,
        )
    if _CH_UNREACHABLE.search(line):
        return Cause(
            CLICKHOUSE_UNREACHABLE,
            "ClickHouse could not be reached, also after retries.",
            "Check that ClickHouse runs and that the ClickHouse connection's host and port are right (the "
            "connection's Test button checks them); the job restarts on its own and nothing is lost or written "
            "twice.",
            line,
        )
    return Cause(
        CLICKHOUSE_ERROR,
        f"ClickHouse refused the write: {line.split(_CLICKHOUSE, 1)[-1].lstrip(': ')}",
        "Correct what ClickHouse names (often a value that does not fit a column's type, or the table's engine).",
        line,
    )


def _spec_problem(text: str) -> str:
    """The runner logs "invalid pipeline spec FILE:" and the problems on the lines after it."""
    lines = text.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        if "invalid pipeline spec" in lines[index] or "cannot read the spec" in lines[index]:
            after = [line.strip() for line in lines[index + 1 : index + 4] if line.strip() and "clearflow:" not in line]
            head = _strip_prefix(lines[index])
            return _shorten("; ".join(after) if after and head.endswith(":") else head, 500)
    return ""


def _runner_error(text: str) -> str | None:
    """The runner's last error (`spark_jobs.run` logs "pipeline X failed: ..."), with the lines its message runs on
    (ClickHouse's and the spec's messages span lines), up to the next log line."""
    lines = text.splitlines()
    starts = [index for index, line in enumerate(lines) if _RUNNER_ERROR in line]
    if not starts:
        return None
    found = [_strip_prefix(lines[starts[-1]])]
    for line in lines[starts[-1] + 1 : starts[-1] + 6]:
        if _LOG_PREFIX.match(line) or line.startswith("clearflow:"):
            break
        found.append(line)
    return "\n".join(found)


def _unknown_what(text: str, exit_code: int | None) -> str:
    runner = _runner_error(text)
    line = " ".join(runner.split()) if runner else last_meaningful_line(text)
    code = "killed or lost" if exit_code is None else f"exit code {exit_code}"
    return f"The job failed ({code}): {_shorten(line, 500)}" if line else f"The job ended ({code})."


def last_meaningful_line(text: str) -> str:
    """The last line that says something about an error: never a traceback's frame or header, nor a stack line."""
    candidates = [_strip_prefix(line) for line in text.splitlines() if line.strip() and not _NOISE.match(line)]
    errors = [line for line in candidates if _ERROR_WORDS.search(line)]
    chosen = (errors or candidates or [""])[-1]
    return chosen.strip()


def root_line(text: str) -> str:
    """The most useful line of a streaming failure for the job's own log: the line the cause was recognised by
    (ClickHouse's or Kafka's message, the out-of-memory error), else the last meaningful line."""
    for marker in ("ClickHouseWriteError:", "SpecError:", "clearflow: unknown Avro schema id"):
        index = text.rfind(marker)
        if index >= 0:
            return text[index:].split("\n")[0]
    cause = classify(text, 1)
    if cause.detail:
        return cause.detail
    return last_meaningful_line(text)
