"""The job's SparkSession: the settings every query needs (UTC, lenient user expressions, the Arrow batches to the
sink, the RocksDB state store with bounded memory), the checkpoint's in-process local file system, and the class-data
archive's JVM options (`spark_jobs.cds`)."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from clearflow_spec import sizing
from spark_jobs import cds
from spark_jobs.jars import job_jars
from spark_jobs.source import REDACTION_REGEX

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# RocksDB's memory (block cache and write buffers of every state partition together), so the job's RSS levels
# off whatever the window holds. The worker sizes it (clearflow_spec.job_sizing.job_resources gives the job
# `--conf <ROCKSDB_MEMORY_CONF>=N`); start_query sizes the rest from the value in effect. Without one (a test, a
# bench): the unsized bound (clearflow_spec.sizing.UNSIZED_ROCKSDB_MB).
DEFAULT_STATE_MEMORY_MB = sizing.UNSIZED_ROCKSDB_MB
_ROCKSDB = "spark.sql.streaming.stateStore.rocksdb"
ROCKSDB_MEMORY_CONF = sizing.ROCKSDB_MEMORY_CONF


def state_store_conf(*, memory_mb: int = DEFAULT_STATE_MEMORY_MB) -> dict[str, str]:
    """The state store's settings: RocksDB (the dedup processor needs it) with bounded memory."""
    memory_mb = max(64, int(memory_mb))
    return {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        # A changelog per batch instead of uploading a snapshot of the whole state each time.
        f"{_ROCKSDB}.changelogCheckpointing.enabled": "true",
        # One memory budget (an LRU cache charged with the write buffers too) shared by all state partitions.
        f"{_ROCKSDB}.boundedMemoryUsage": "true",
        ROCKSDB_MEMORY_CONF: str(memory_mb),
        f"{_ROCKSDB}.writeBufferCacheRatio": str(sizing.ROCKSDB_WRITE_BUFFER_SHARE),
        # Index and filter blocks (what every lookup reads) go to this part of the cache first, where the data
        # blocks a lookup of an old key or the expiry's scan reads do not push them out (Spark's default, 0.1,
        # left a full 1h window's filters to be read again and again).
        f"{_ROCKSDB}.highPriorityPoolRatio": str(sizing.ROCKSDB_METADATA_SHARE),
        f"{_ROCKSDB}.writeBufferSizeMB": str(max(4, memory_mb // 16)),
        f"{_ROCKSDB}.maxWriteBufferNumber": "3",
        f"{_ROCKSDB}.blockCacheSizeInMB": str(max(8, memory_mb // 2)),
        # Counting rows costs two more point reads per new key (an existence check on put, one on TTL expiry).
        f"{_ROCKSDB}.trackTotalNumberOfRows": "false",
    }


ARROW_BATCH_ROWS = 10_000


def session_conf(*, shuffle_partitions: int = 2) -> dict[str, str]:
    """Spark settings the job needs (the thread stack for deep expression trees, UTC, lenient user expressions,
    the RocksDB state store)."""
    return {
        # The class-data archive (spark_jobs.cds), when made: the JVM maps Spark's classes instead of loading them.
        "spark.driver.extraJavaOptions": " ".join(filter(None, ["-Xss32m", cds.java_options()])),
        "spark.sql.session.timeZone": "UTC",
        # Runtime errors in user expressions give NULL instead of failing the whole job on one event.
        "spark.sql.ansi.enabled": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        # The sink's Arrow batches to the Python writer are bounded by rows only. With a byte bound (Spark's
        # default, 256 MB) the Arrow writer adds up every column's buffer sizes after each row: 3% of the task
        # threads' profile samples at 20,000 events/s (docs/performance.md, "Who holds the cores"). 10,000 rows keep
        # a batch's buffers small for ordinary events; the Python writer holds a partition's whole micro-batch
        # anyway (spark_jobs.sink.PartitionWriter), so the byte bound never limited its memory.
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
        "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),  # Int.MaxValue: Spark skips the check
        # No batch without data: the dedup processor runs in processing time, for which Spark would run an empty
        # batch (a state store load and commit) at every trigger, and an availableNow run would never end.
        # Expired keys are removed by the next batch with data (a read already treats them as gone).
        "spark.sql.streaming.noDataMicroBatches.enabled": "false",
        "spark.python.worker.reuse": "true",
        # No web UI unless asked (CLEARFLOW_SPARK_UI=1): its Jetty server and listeners cost start time and
        # memory in every job, and nobody opens a per-job UI behind the product's own pages.
        "spark.ui.enabled": "false",
        # Keeps the Kafka connector's secret options (SASL JAAS config, client key) out of the UI and event log.
        "spark.redaction.regex": REDACTION_REGEX,
        # The dedup state; its memory bound is left to the job's own --conf (start_query sizes from it).
        **{key: value for key, value in state_store_conf().items() if key != ROCKSDB_MEMORY_CONF},
    }


# The FileContext API's local file system (`file:`, where a checkpoint on one machine lives) from the engine's
# jar (io.clearflow.spark.InProcessLocalFileSystem): Hadoop's own, without pyspark's missing native library,
# started a `readlink` process for each checkpoint file it renamed and a `chmod` for each it created, on the
# micro-batch's path (the offset and commit logs, each task's changelog; docs/performance.md). A session setting,
# so each query's checkpoint file manager and state stores get it (at launch, spark-submit would look the class
# up before the jar is on its classpath).
# The FileSystem API's (`fs.file.impl`) hard-links the SST files the state store's maintenance thread uploads into
# the checkpoint instead of copying them (InProcessLocalFileSystem.Linking). Hadoop caches one FileSystem per
# scheme, made at launch with its own class, so the session's `file:` file systems are made anew (disable.cache).
IN_PROCESS_LOCAL_FILES = {
    "fs.AbstractFileSystem.file.impl": "io.clearflow.spark.InProcessLocalFileSystem$Fs",
    "fs.file.impl": "io.clearflow.spark.InProcessLocalFileSystem$Linking",
    "fs.file.impl.disable.cache": "true",
}


def use_in_process_local_files(spark: SparkSession) -> bool:
    """Give the session's queries IN_PROCESS_LOCAL_FILES when the engine's jar (as built now) has the class;
    whether so (an engine jar built before it: Hadoop's own, rather than a query that cannot find the class)."""
    from py4j.java_gateway import JavaClass

    package = spark._jvm.io.clearflow.spark  # type: ignore[union-attr]
    if not all(
        isinstance(getattr(package, f"InProcessLocalFileSystem${name}"), JavaClass) for name in ("Fs", "Linking")
    ):
        return False
    for key, value in IN_PROCESS_LOCAL_FILES.items():
        spark.conf.set(key, value)
    return True


def build_session(
    *,
    app_name: str,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    jars: list[str] | None = None,
    java_options: str = "",
) -> SparkSession:
    """A SparkSession whose Python workers run this interpreter, with Spark's Kafka connector on its classpath.

    `jars` defaults to `spark_jobs.jars.job_jars()` (local files: nothing is downloaded). Pass `[]` under
    `spark-submit`, whose `--jars` already carries them. `java_options`: JVM options for the driver after the
    session's own (a light job's, clearflow_spec.sizing.driver_java_options); a `spark.driver.extraJavaOptions` in
    `conf` replaces both.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    jar_list = job_jars() if jars is None else jars
    # Local mode: Python workers fork from a daemon with the sink's modules imported (spark_jobs.python_daemon).
    # Not on a cluster, whose executors' Python may lack them (the daemon would fail every task).
    daemon = {"spark.python.daemon.module": "spark_jobs.python_daemon"} if (master or "").startswith("local") else {}
    own = session_conf()
    if java_options:
        own["spark.driver.extraJavaOptions"] = f"{own['spark.driver.extraJavaOptions']} {java_options}"
    settings = {
        **own,
        **daemon,
        **({"spark.jars": ",".join(jar_list)} if jar_list else {}),
        **(conf or {}),
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
