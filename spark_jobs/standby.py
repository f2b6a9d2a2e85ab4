"""The job side of a standby: a `spark_jobs.run --standby CHANNEL` process with its JVM and SparkSession up,
waiting for the one pipeline it will run.

The worker starts a standby ahead of any deploy (`worker.standby`), so a deploy skips the JVM's and the
session's start (most of deploy -> first row). The standby listens on a Unix socket in its run directory (mode
0700: only this user reaches it) and takes exactly one hand-off (`clearflow_spec.protocol.Handoff`): the path of
the spec file (the secrets stay in that 0600 file, as for any job), the checkpoint, the trigger and the Spark
settings the run asks for. It accepts only when its session can honour them: the same driver memory, and every
setting either equal to the session's or a runtime SQL setting (RocksDB's memory bound) that is set now, before
any query. Anything else is refused with the reason, and the worker starts the pipeline cold.

Before it listens, it rehearses (`rehearse`): a made-up pipeline of a few events from a local file, through the
same parse, dedup (the JVM processor on RocksDB) and foreachBatch-with-Arrow path, into a temporary checkpoint.
The JVM then has loaded and compiled what the first real query and batch need (the foreachBatch callback server,
RocksDB's native library, code generation), which a bare session has not: seconds off the first row.

One standby serves one pipeline and then is that pipeline's job until it ends: nothing from one pipeline can
reach the next (no shared session, no reused process; the rehearsal's data is made up and removed).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clearflow_spec.protocol import Handoff

log = logging.getLogger("clearflow.standby")

ACCEPT_POLL_SECONDS = 0.5  # how often the wait looks at the stop flag
RECEIVE_TIMEOUT_SECONDS = 10.0  # a worker that connects and sends nothing is dropped


def settings_conflict(spark: Any, handoff: Handoff) -> tuple[str | None, dict[str, str]]:
    """Why this session cannot run the hand-off (None when it can), and the runtime settings to set for it."""
    own_memory = spark.sparkContext.getConf().get("spark.driver.memory", "")
    if handoff.driver_memory and handoff.driver_memory.lower() != own_memory.lower():
        return f"the run is sized for a {handoff.driver_memory} heap, the standby has {own_memory or 'the default'}", {}
    wanted: dict[str, str] = {}
    for item in handoff.conf:
        key, _, value = item.partition("=")
        wanted[key.strip()] = value.strip()
    to_set: dict[str, str] = {}
    static = spark.sparkContext._jvm.org.apache.spark.sql.internal.SQLConf
    for key, value in wanted.items():
        current = spark.conf.get(key, None)
        if current == value:
            continue
        if key.startswith("spark.sql.") and not static.isStaticConfigKey(key):
            to_set[key] = value  # read when a query starts: setting it now is the same as at launch
            continue
        return f"the setting {key}={value} needs a new JVM (the standby has {key}={current})", {}
    return None, to_set


def wait_for_handoff(spark: Any, channel: Path, stop: threading.Event) -> Handoff | None:
    """Listen on `channel` until a hand-off this session can run arrives (then apply its settings and return it),
    or `stop` is set (None). Refused hand-offs are answered with the reason and the wait goes on."""
    channel.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with socket_path(channel) as address:
            server.bind(address)
        os.chmod(channel, 0o600)
        server.listen(4)
        server.settimeout(ACCEPT_POLL_SECONDS)
        log.info("standby: JVM and session up, waiting for a pipeline on %s", channel)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                handoff = _receive(connection)
                if handoff is None:
                    continue
                reason, to_set = settings_conflict(spark, handoff)
                if reason is not None:
                    log.info("standby: refused a pipeline: %s", reason)
                    _answer(connection, {"accepted": False, "reason": reason})
                    continue
                for key, value in to_set.items():
                    spark.conf.set(key, value)
                    log.info("standby: %s=%s for this pipeline", key, value)
                # The supervisor (worker.jobwrap) is this process's parent: the pid the run records.
                if _answer(connection, {"accepted": True, "pid": os.getppid()}):
                    return handoff
                log.info("standby: the worker left before the answer; still waiting")
        return None
    finally:
        server.close()
        channel.unlink(missing_ok=True)  # taken (or stopping): no other worker may connect


@contextlib.contextmanager
def socket_path(path: Path) -> Iterator[str]:
    """An address for the Unix socket at `path` that fits the kernel's 108 bytes: the path itself when short,
    else through /proc/self/fd of its directory (run directories under a deep run root are longer)."""
    if len(os.fsencode(str(path))) < 100:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def _receive(connection: socket.socket) -> Handoff | None:
    connection.settimeout(RECEIVE_TIMEOUT_SECONDS)
    data = b""
    with contextlib.suppress(OSError):
        while not data.endswith(b"\n") and len(data) < 64 * 1024:
            chunk = connection.recv(4096)
            if not chunk:
                break
            data += chunk
    try:
        return Handoff.from_json(data.decode())
    except (ValueError, TypeError) as exc:
        log.warning("standby: unreadable hand-off ignored: %s", exc)
        return None


def _answer(connection: socket.socket, answer: dict[str, Any]) -> bool:
    try:
        connection.sendall((json.dumps(answer) + "\n").encode())
        return True
    except OSError:
        return False


# The rehearsal's pipeline: JSON events deduplicated on `id`, two columns. Its addresses are never contacted.
REHEARSAL_SPEC = {
    "version": 1,
    "name": "standby-rehearsal",
    "source": {
        "kafka": {"bootstrap_servers": "127.0.0.1:9"},
        "topics": ["rehearsal"],
        "fields": [{"path": "id", "type": "string"}, {"path": "n", "type": "int"}],
    },
    "dedup": {"keys": ["id"], "window": "10m"},
    "sink": {
        "clickhouse": {"host": "127.0.0.1"},
        "table": "rehearsal",
        "columns": [
            {"field": "id", "column": "id", "type": "String"},
            {"field": "n", "column": "n", "type": "Nullable(Int64)"},
        ],
    },
}
REHEARSAL_TIMEOUT_SECONDS = 300.0
_BOUNDED_MEMORY = "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage"


def rehearse(spark: Any) -> None:
    """Run a made-up pipeline once through the engine's path (parse, dedup, foreachBatch with Arrow), from a
    local file into a temporary checkpoint, then remove both. Only a warm-up: a failure is logged, not raised."""
    from pyspark.sql import functions as F

    from clearflow_spec.spec import parse_spec
    from spark_jobs.pipeline import build_stream
    from spark_jobs.session import ROCKSDB_MEMORY_CONF, state_store_conf

    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="clearflow-rehearsal-"))
    # The state store's settings as a query would have them, except RocksDB's bounded memory: one pool per JVM,
    # sized by the first store that opens, so it is left to the pipeline. Put back as they were afterwards.
    rehearsal_conf = {**state_store_conf(), _BOUNDED_MEMORY: "false"}
    rehearsal_conf.pop(ROCKSDB_MEMORY_CONF)
    before = {key: spark.conf.get(key, None) for key in rehearsal_conf}
    for key, value in rehearsal_conf.items():
        spark.conf.set(key, value)
    try:
        events = workdir / "events"
        events.mkdir()
        lines = [json.dumps({"id": f"e{i % 15}", "n": i}) for i in range(20)] + ["not json"]
        (events / "events.txt").write_text("\n".join(lines) + "\n")
        raw = spark.readStream.format("text").load(str(events))
        raw = raw.select(
            F.col("value").cast("binary").alias("_cf_value"),
            F.lit("rehearsal").alias("_kafka_topic"),
            F.lit(0).alias("_kafka_partition"),
            F.lit(0).cast("long").alias("_kafka_offset"),
            F.current_timestamp().alias("_kafka_timestamp"),
            F.lit(None).cast("string").alias("_kafka_key"),
            F.create_map().cast("map<string,string>").alias("_kafka_headers"),
        )
        stream = build_stream(raw, parse_spec(REHEARSAL_SPEC))
        query = (
            stream.writeStream.queryName("clearflow-standby-rehearsal")
            .foreachBatch(_rehearsal_batch)
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        if not query.awaitTermination(REHEARSAL_TIMEOUT_SECONDS):
            query.stop()
        log.info("standby: rehearsal done in %.1f s", time.monotonic() - started)
    except Exception as exc:
        log.warning("standby: the rehearsal failed (the first batch will be slower): %s", exc)
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        shutil.rmtree(workdir, ignore_errors=True)


def _rehearsal_batch(batch: Any, _batch_id: int) -> None:
    """What spark_jobs.query.BatchWriter does with a batch, without the insert: kept, counted, handed to Python."""
    from spark_jobs.query import partition_rows

    batch = batch.persist()
    try:
        partition_rows(batch)
        batch.mapInArrow(_pass_batches, batch.schema).count()
    finally:
        batch.unpersist()


def _pass_batches(batches: Any) -> Any:
    yield from batches
