"""Run one pipeline: `python -m spark_jobs.run --spec FILE [--checkpoint DIR] [--master URL] [--redis-url URL]`.

With `--standby CHANNEL` instead of `--spec`, it starts the JVM and the session first and then waits on the Unix
socket CHANNEL for the pipeline to run (`spark_jobs.standby`: spec file, checkpoint, trigger, settings).

Also works as `spark-submit [--master URL] --conf spark.driver.extraJavaOptions=-Xss32m --jars JARS
$(python -c 'import spark_jobs.run as r; print(r.__file__)') --spec FILE`, from any working directory, where
JARS are the Kafka connector and the engine jar: `",".join(spark_jobs.jars.job_jars())`.
SIGTERM (or Ctrl-C) stops the query after the current micro-batch. Exit codes (`clearflow_spec.protocol.ExitCode`):
0 stopped or caught up, 1 the query failed (the cause, e.g. ClickHouse's message, is logged), 2 the spec is invalid.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from clearflow_spec.protocol import STARTED_LINE, TIMING_LINE, ExitCode
from clearflow_spec.sizing import LIGHT_TRIGGER
from spark_jobs import object_store
from spark_jobs.jars import object_store_jars

if TYPE_CHECKING:
    from clearflow_spec.avro_schema import WriterSchemas
    from clearflow_spec.spec import PipelineSpec

log = logging.getLogger("clearflow.run")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.run", description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--spec", help="pipeline spec (JSON file)")
    what.add_argument("--standby", metavar="CHANNEL", help="start Spark, then wait on this Unix socket for a pipeline")
    parser.add_argument(
        "--checkpoint",
        help="checkpoint directory or URI (default: $CLEARFLOW_CHECKPOINT_ROOT/<name>, "
        "else ~/.clearflow/checkpoints/<name>)",
    )
    parser.add_argument("--master", help="Spark master URL (default local[*]; ignored under spark-submit)")
    parser.add_argument("--redis-url", default=os.environ.get("CLEARFLOW_REDIS_URL"), help="metrics target")
    parser.add_argument("--trigger-interval", default=LIGHT_TRIGGER, help="micro-batch trigger interval")
    parser.add_argument("--available-now", action="store_true", help="process what is there now, then exit")
    parser.add_argument("--shuffle-partitions", type=int, default=max(2, os.cpu_count() or 2))
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument(
        "--driver-java-options", default="", help="extra JVM options of the driver (after the session's own)"
    )
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    parser.add_argument(
        "--idle-after-first-batch",
        action="store_true",
        help="after the first micro-batch, run in Linux's idle scheduling class (a light pipeline's job)",
    )
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def spark_conf(args: argparse.Namespace) -> dict[str, str]:
    """The Spark settings the command line asks for (--conf last, so it overrides the others), with S3A's when the
    checkpoint is on object storage (a standby's is known only later: the checkpoint root's then)."""
    conf = {"spark.sql.shuffle.partitions": str(args.shuffle_partitions), "spark.driver.memory": args.driver_memory}
    if object_store.is_object_store(args.checkpoint or os.environ.get("CLEARFLOW_CHECKPOINT_ROOT", "")):
        conf.update(object_store.spark_conf())
        if "PYSPARK_GATEWAY_PORT" not in os.environ:  # under spark-submit its --jars carry them (to executors too)
            # The driver's class path, not spark.jars: in local mode the executors are the driver's threads, and
            # spark.jars would copy the AWS SDK's 650 MB into every job's work directory.
            conf["spark.driver.extraClassPath"] = os.pathsep.join(object_store_jars())
    for item in args.conf:
        key, _, value = item.partition("=")
        conf[key.strip()] = value.strip()
    return conf


def default_checkpoint(name: str) -> str:
    root = os.environ.get("CLEARFLOW_CHECKPOINT_ROOT") or str(Path.home() / ".clearflow" / "checkpoints")
    return f"{root.rstrip('/')}/{name}" if "://" in root else str(Path(root) / name)


def main(argv: list[str] | None = None) -> int:
    """The job's steps: logging, the standby's wait for a pipeline (with --standby), the spec, the ClickHouse
    tables and the schemas while the session starts, then the query, run again for an Avro schema new since the
    start, until it ends or a stop is asked."""
    args = parse_args(argv)
    _configure_logging(args)
    stop_requested = threading.Event()
    spark = None
    # A standby's niceness after its pipeline's first batch (protocol.Handoff.niceness), fixed at the hand-off so
    # that lowering it again (a query started again below) changes nothing.
    niceness_after_first_batch: int | None = None
    if args.standby:
        taken = _take_handoff(args, stop_requested)
        if isinstance(taken, int):
            return taken
        spark, niceness_after_first_batch = taken
    spec_path = Path(args.spec).expanduser().resolve()
    spec = _read_spec(spec_path)
    if isinstance(spec, int):
        return spec
    if args.standby:
        log.info("standby: runs pipeline %s from now on", spec.name)
    checkpoint = _checkpoint_path(args, spec)
    start = _start_early(spec)
    if spark is None:
        spark = _start_session(args, app_name=f"clearflow-{spec.name}", who=f"pipeline {spec.name}")
        if spark is None:
            return ExitCode.FAILED
    _stop_on_signals(stop_requested)
    try:
        ended = _run_queries(
            spark,
            spec,
            args=args,
            spec_path=spec_path,
            checkpoint=checkpoint,
            start=start,
            niceness_after_first_batch=niceness_after_first_batch,
            stop_requested=stop_requested,
        )
    finally:
        spark.stop()
    if isinstance(ended, int):
        return ended
    return _exit_code(spec, ended, stopped=stop_requested.is_set())


def _configure_logging(args: argparse.Namespace) -> None:
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    # The start's steps, each as a log line with its epoch time (bench/deploy_start.py reads them).
    log.info("%s", TIMING_LINE.format(step="runner", at=time.time()))
    logging.getLogger("py4j").setLevel(logging.WARNING)


def _stop_on_signals(stop_requested: threading.Event) -> None:
    """SIGTERM and SIGINT ask for a stop after the current micro-batch."""

    def request_stop(signum: int, _frame: object) -> None:
        log.info("received %s: stopping after the current micro-batch", signal.Signals(signum).name)
        stop_requested.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)


def _take_handoff(args: argparse.Namespace, stop_requested: threading.Event) -> tuple[Any, int | None] | int:
    """A standby's start: the session first, then the wait on its channel for a pipeline, whose spec file,
    checkpoint, trigger and first-batch settings go into `args`. The session and the niceness after the first
    batch (None: as it is); an exit code when no pipeline came (stopped) or the session could not start."""
    _stop_on_signals(stop_requested)
    spark = _start_session(args, app_name="clearflow-standby", who="standby")
    if spark is None:
        return ExitCode.FAILED
    from spark_jobs.standby import rehearse, wait_for_handoff

    rehearse(spark)
    handoff = wait_for_handoff(spark, Path(args.standby), stop_requested)
    if handoff is None:
        log.info("standby stopped before it took a pipeline")
        spark.stop()
        return ExitCode.STOPPED
    log.info("%s", TIMING_LINE.format(step="handoff", at=time.time()))
    args.spec, args.checkpoint, args.trigger_interval = handoff.spec, handoff.checkpoint, handoff.trigger_interval
    niceness = min(19, os.getpriority(os.PRIO_PROCESS, 0) + handoff.niceness) if handoff.niceness else None
    args.idle_after_first_batch = handoff.idle_after_first_batch
    return spark, niceness


def _read_spec(spec_path: Path) -> PipelineSpec | int:
    """The spec file's pipeline, or ExitCode.INVALID_SPEC (logged) when it cannot be read or is invalid."""
    from clearflow_spec.spec import SpecError, parse_spec

    try:
        return parse_spec(spec_path.read_text())
    except OSError as exc:
        log.error("cannot read the spec %s: %s", spec_path, exc)
        return ExitCode.INVALID_SPEC
    except SpecError as exc:
        log.error("invalid pipeline spec %s:\n%s", spec_path, exc)
        return ExitCode.INVALID_SPEC


def _checkpoint_path(args: argparse.Namespace, spec: PipelineSpec) -> str:
    checkpoint = args.checkpoint or default_checkpoint(spec.name)
    if "://" not in checkpoint:
        checkpoint = str(Path(checkpoint).expanduser().resolve())
    return checkpoint


class _EarlyStart(NamedTuple):
    """What needs no Spark, started while the JVM and the session start (they take seconds)."""

    prepared: Future[None]  # the ClickHouse tables' preparation
    schemas: Future[WriterSchemas | None]  # the registry's schemas


def _start_early(spec: PipelineSpec) -> _EarlyStart:
    """The ClickHouse tables' preparation and the registry's schemas, in threads; the query still starts only once
    both are done."""
    from spark_jobs.pipeline import prepare_sink, source_schemas

    early = ThreadPoolExecutor(max_workers=2, thread_name_prefix="clearflow-start")
    start = _EarlyStart(early.submit(prepare_sink, spec), early.submit(source_schemas, spec))
    early.shutdown(wait=False)
    return start


def _run_queries(
    spark: Any,
    spec: PipelineSpec,
    *,
    args: argparse.Namespace,
    spec_path: Path,
    checkpoint: str,
    start: _EarlyStart,
    niceness_after_first_batch: int | None,
    stop_requested: threading.Event,
) -> BaseException | int | None:
    """Start the query and run it until it ends or a stop is asked; again, from the checkpoint, when records carry
    an Avro schema registered after the start. The last run's failure (None: none), or an exit code when the query
    could not start (logged)."""
    from clearflow_spec.schema_registry import RegistryError
    from clearflow_spec.spec import SpecError
    from spark_jobs.avro_decode import unloaded_schema_id
    from spark_jobs.cpu_priority import lower_after_first_batch
    from spark_jobs.pipeline import source_schemas
    from spark_jobs.query import run_until_stopped, start_query, stop_query

    trigger = {"availableNow": True} if args.available_now else {"processingTime": args.trigger_interval}
    extra_schema_ids: set[int] = set()
    while True:
        try:
            if extra_schema_ids:
                schemas = source_schemas(spec, extra_ids=extra_schema_ids)
            else:
                schemas = start.schemas.result()
                start.prepared.result()  # its error, if any, is handled as start_query's was
            query = start_query(
                spark,
                spec,
                checkpoint=checkpoint,
                redis_url=args.redis_url,
                trigger=trigger,
                schemas=schemas,
                prepare=False,
            )
        except SpecError as exc:
            log.error("invalid pipeline spec %s:\n%s", spec_path, exc)
            return ExitCode.INVALID_SPEC
        except RegistryError as exc:
            log.error("pipeline %s could not start: %s", spec.name, exc)
            return ExitCode.FAILED
        except Exception as exc:
            log.error("pipeline %s could not start: %s", spec.name, exc)
            return ExitCode.FAILED
        if not extra_schema_ids:
            _log_started(spark, spec, query, args=args, checkpoint=checkpoint)
        # At each start: the query before may have ended before its first batch.
        if niceness_after_first_batch is not None or args.idle_after_first_batch:
            threading.Thread(
                target=lower_after_first_batch,
                args=(query, niceness_after_first_batch, args.idle_after_first_batch, stop_requested),
                name="clearflow-priority",
                daemon=True,
            ).start()
        failure = run_until_stopped(query, stop_requested)
        stop_query(spark, query)
        new_id = None if stop_requested.is_set() else unloaded_schema_id(failure)
        if new_id is None or new_id in extra_schema_ids:
            return failure
        # A schema registered after the run started: the failed batch was not committed, so the query
        # starts again from the checkpoint with that schema loaded, and no record is lost or written twice.
        log.info("pipeline %s: records carry Avro schema id %d, new since the start: loading it", spec.name, new_id)
        extra_schema_ids.add(new_id)


def _log_started(spark: Any, spec: PipelineSpec, query: Any, *, args: argparse.Namespace, checkpoint: str) -> None:
    """The query's start, as the worker reads it (STARTED_LINE), and the delivery guarantee."""
    log.info("%s", TIMING_LINE.format(step="query", at=time.time()))
    log.info(
        "%s",
        STARTED_LINE.format(
            name=spec.name,
            query=query.id,
            application=spark.sparkContext.applicationId,
            checkpoint=checkpoint,
            trigger=args.trigger_interval if not args.available_now else "available now",
        ),
    )
    _log_guarantee(spec)


def _exit_code(spec: PipelineSpec, failure: BaseException | None, *, stopped: bool) -> int:
    """How the job ends once its query has: stopped (on request, or caught up), or failed (logged)."""
    if failure is not None and stopped:
        # SIGTERM sent to the whole process group also reaches Spark's JVM, which then shuts down under the
        # running batch. Nothing is lost: the unfinished batch is replayed (idempotently) on restart.
        log.warning("pipeline %s stopped by signal during a micro-batch: %s", spec.name, _root_message(failure))
        return ExitCode.STOPPED
    if failure is not None:
        log.error("pipeline %s failed: %s", spec.name, _root_message(failure))
        return ExitCode.FAILED
    log.info("pipeline %s stopped", spec.name)
    return ExitCode.STOPPED


def _start_session(args: argparse.Namespace, *, app_name: str, who: str) -> Any:
    """The SparkSession the command line asks for, with the Python workers warming up; None when the connector's
    jars are missing (logged). `who` names the job in the log ("pipeline orders", "standby")."""
    from spark_jobs.jars import ConnectorJarsMissing
    from spark_jobs.session import build_session

    under_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    master = args.master or (None if under_spark_submit else "local[*]")
    try:
        # Under spark-submit, `--jars` (spark_jobs.jars.job_jars(), given by the worker) already has them.
        spark = build_session(
            app_name=app_name,
            master=master,
            conf=spark_conf(args),
            jars=[] if under_spark_submit else None,
            java_options=args.driver_java_options,
        )
    except ConnectorJarsMissing as exc:
        log.error("%s could not start: %s", who, exc)
        return None
    spark.sparkContext.setLogLevel("WARN")
    object_store.set_credentials(spark)  # from the environment, in-process: never on a command line
    _quiet_falling_behind(spark)
    log.info("%s", TIMING_LINE.format(step="jvm", at=_jvm_start_time(spark)))
    log.info("%s", TIMING_LINE.format(step="session", at=time.time()))
    if spark.sparkContext.uiWebUrl:  # off unless asked (spark.ui.enabled=true, the worker's CLEARFLOW_SPARK_UI=1)
        log.info("%s: Spark UI at %s", who, spark.sparkContext.uiWebUrl)
    # The first micro-batch's sink runs in Python workers: fork them now, while the query is being set up.
    threading.Thread(target=_warm_python_workers, args=(spark,), name="clearflow-warm", daemon=True).start()
    return spark


def _warm_python_workers(spark: object) -> None:
    """Run a no-op Arrow task per core so that Spark's Python daemon and reusable workers exist (with the sink's
    modules imported, spark_jobs.python_daemon) before the first micro-batch needs them: seconds off the first
    row. Only a warm-up: any failure is the first batch's to report."""
    try:
        parallelism = spark.sparkContext.defaultParallelism  # type: ignore[attr-defined]
        spark.sparkContext.setJobDescription("clearflow: warm up the Python workers")  # type: ignore[attr-defined]
        df = spark.range(0, parallelism, 1, parallelism)  # type: ignore[attr-defined]
        df.mapInArrow(_pass_batches, df.schema).count()
    except Exception as exc:
        log.debug("warming the Python workers failed: %s", exc)


def _pass_batches(batches: object) -> object:
    yield from batches  # type: ignore[attr-defined]


# A busy pipeline's micro-batches run back to back by design (its trigger is shorter than a batch:
# clearflow_spec.sizing.trigger_interval); Spark warns "Current batch is falling behind" after each of them, which
# would fill the job's log and the tail the pipeline page shows. How far behind a job is shows in its lag metric.
FALLING_BEHIND_LOGGER = "org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor"


def _quiet_falling_behind(spark: Any) -> None:
    jvm = spark._jvm  # py4j: log4j2's Configurator sets one logger's level at run time
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        FALLING_BEHIND_LOGGER, jvm.org.apache.logging.log4j.Level.ERROR
    )


def _jvm_start_time(spark: object) -> float:
    """Epoch seconds when the driver's JVM started (the JVM's own clock: same machine)."""
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        return jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime() / 1000.0
    except Exception:  # only a log line
        return 0.0


def _log_guarantee(spec: PipelineSpec) -> None:
    """Say at start whether replays are dropped (exactly-once) or may be written twice (at-least-once)."""
    from clearflow_spec.connections import connection_dict
    from spark_jobs.sink import table_insert_dedup

    sink = spec.sink
    try:
        result = table_insert_dedup(
            connection_dict(sink.clickhouse, reveal_secrets=True),
            database=sink.clickhouse.database,
            table=sink.table,
            window=sink.insert_dedup_window,
        )
    except Exception as exc:  # the job runs anyway; only the claim is withheld
        log.warning("pipeline %s: delivery guarantee unknown, could not read the table's engine: %s", spec.name, exc)
        return
    if result is None:
        return
    if result.exactly_once:
        log.info("pipeline %s: exactly-once: %s", spec.name, result.reason)
    else:
        fix = f"; to drop replays run: {result.fix_sql}" if result.fix_sql else ""
        log.warning("pipeline %s: at-least-once: %s%s", spec.name, result.reason, fix)


def _root_message(exc: BaseException) -> str:
    """The most useful line of a streaming failure: the ClickHouse, Kafka, memory or Python error, not the JVM
    stack (`clearflow_spec.failures` names its cause; the worker reads that from the log)."""
    from clearflow_spec.failures import root_line

    return root_line(str(exc)) or repr(exc)


if __name__ == "__main__":
    sys.exit(main())
