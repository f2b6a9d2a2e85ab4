"""A failed job's cause in words (clearflow_spec.failures), from the texts real jobs leave in their logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from clearflow_spec import failures
from clearflow_spec.failures import classify, root_line

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`

DATA = Path(__file__).resolve().parents[1] / "data"
JOB_LOG = (DATA / "spark_job.log").read_text()
# Ends of job logs, one failure each, written like spark_job.log with Spark 4.2's error-class messages.
FAILURES = DATA / "job_failures"

# A job at 20k events/s with a 1-hour window: the JVM ran out of heap in a batch, the driver's JVM went away, and the
# Python side died with a Py4J traceback (the reason shown was its first line).
HEAP_LOG = (FAILURES / "heap.log").read_text()
STATE_OOM_LOG = (FAILURES / "state_oom.log").read_text()
SCHEMA_LOG = (FAILURES / "key_schema.log").read_text()
OPERATOR_LOG = (FAILURES / "operator_changed.log").read_text()
KAFKA_DOWN_LOG = (FAILURES / "kafka_down.log").read_text()
TOPIC_LOG = (FAILURES / "kafka_topic.log").read_text()
KAFKA_AUTH_LOG = (FAILURES / "kafka_auth.log").read_text()
CONSUMER_LOG = (FAILURES / "kafka_consumer.log").read_text()


def runner_line(message: str) -> str:
    return f"2026-11-26 10:01:00,000 ERROR clearflow.run pipeline pipeline-5 failed: {message}\n"


def test_a_clickhouse_that_cannot_be_reached_is_named_from_the_real_job_log() -> None:
    cause = classify(JOB_LOG, 1)
    assert cause.code == failures.CLICKHOUSE_UNREACHABLE
    assert cause.words.startswith("ClickHouse could not be reached, also after retries. Check that ClickHouse runs")
    assert cause.detail.startswith("ClickHouseWriteError: insert into default.faults_2bbaff82")
    assert "Max retries exceeded" in cause.detail and "Traceback" not in cause.words


def test_running_out_of_heap_says_so_and_names_the_memory_setting_not_the_traceback() -> None:
    cause = classify(HEAP_LOG, 1, memory="1g")
    assert cause.code == failures.OUT_OF_MEMORY
    assert cause.words == (
        "The job ran out of memory. Give the job more memory (CLEARFLOW_DRIVER_MEMORY; it ran with 1g), make sure "
        "the machine or container holds the job memory of the pipeline's expected dedup state (its heap plus "
        "RocksDB's bound, maxMemoryUsageMB; CLEARFLOW_JOB_MEMORY_LIMIT says what one job may take), or choose a "
        "shorter dedup window."
    )
    assert cause.detail == "java.lang.OutOfMemoryError: Java heap space"
    assert classify("java.lang.OutOfMemoryError: GC overhead limit exceeded", 1).code == failures.OUT_OF_MEMORY


def test_a_job_killed_without_a_word_of_its_own_is_taken_for_the_oom_killer() -> None:
    cause = classify("2026-11-26 10:00:00,000 INFO clearflow.run pipeline p started\n", 137)
    assert cause.code == failures.OUT_OF_MEMORY and "SIGKILL" in cause.what and "OOM killer" in cause.what
    assert classify("", -9).code == failures.OUT_OF_MEMORY
    assert classify("", 52).what.startswith("The job ran out of memory (Spark's JVM exited with code 52")
    assert classify("Container killed by YARN for exceeding physical memory limits.", 1).code == failures.OUT_OF_MEMORY


def test_a_state_too_large_to_load_back_is_a_state_problem_with_its_way_out() -> None:
    cause = classify(STATE_OOM_LOG, 1, memory="2g")
    assert cause.code == failures.STATE_TOO_LARGE
    assert (
        cause.what == "The dedup state in the checkpoint could not be loaded back: it does not fit in the job's memory."
    )
    assert "CLEARFLOW_DRIVER_MEMORY; it ran with 2g" in cause.change and "maxMemoryUsageMB" in cause.change
    assert "new checkpoint" in cause.change
    # The state is always in RocksDB now: no store left to choose in the spec.
    assert "state_store" not in cause.change
    missing = runner_line(
        "[CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS] Error reading delta file 3.delta"
    )
    assert classify(missing, 1).code == failures.STATE_UNREADABLE


@pytest.mark.parametrize(
    "text",
    [
        SCHEMA_LOG,
        OPERATOR_LOG,
        runner_line("[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does not match existing state"),
        runner_line("[STATE_STORE_INVALID_CONFIG_AFTER_RESTART] Cannot change providerClass between restarts."),
        runner_line("[STATE_STORE_COLUMN_FAMILY_SCHEMA_INCOMPATIBLE] Incompatible schema transformation"),
        runner_line("Provided schema doesn't match to the schema for existing state!"),
        # spark_jobs.checkpoint_state.CheckpointMismatch, logged by the runner before the query starts
        "2026-11-27 04:00:00,000 ERROR clearflow.run pipeline p could not start: the checkpoint /c holds dedup state "
        "of an earlier ClearFlow engine (dedupeWithinWatermark), which this version cannot read: reset the "
        "pipeline's checkpoint\n",
        "2026-11-27 04:00:00,000 ERROR clearflow.run pipeline p could not start: the checkpoint /c holds join state "
        "of an earlier ClearFlow engine (each side's events in a MapState), which this version cannot read: reset "
        "the pipeline's checkpoint\n",
    ],
)
def test_a_checkpoint_that_no_longer_fits_the_spec_says_how_to_get_going(text: str) -> None:
    cause = classify(text, 1)
    assert cause.code == failures.CHECKPOINT_MISMATCH
    assert cause.words.startswith("The checkpoint no longer fits the spec")
    assert "start from a new checkpoint" in cause.change
    assert not cause.restart_helps


@pytest.mark.parametrize(
    ("text", "code", "words"),
    [
        (KAFKA_DOWN_LOG, failures.KAFKA_UNREACHABLE, "The Kafka brokers could not be reached."),
        (CONSUMER_LOG, failures.KAFKA_UNREACHABLE, "The Kafka brokers could not be reached."),
        (TOPIC_LOG, failures.KAFKA_TOPIC_MISSING, "The Kafka topic does not exist"),
        (KAFKA_AUTH_LOG, failures.KAFKA_AUTH, "Kafka refused the job's credentials or permissions."),
        (
            runner_line("[KAFKA_DATA_LOSS] Some data may have been lost because they are not available in Kafka"),
            failures.KAFKA_DATA_LOST,
            "Events the checkpoint points at are no longer in Kafka",
        ),
    ],
)
def test_kafka_causes(text: str, code: str, words: str) -> None:
    cause = classify(text, 1)
    assert (cause.code, cause.words[: len(words)]) == (code, words)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (
            "ClickHouseWriteError: table default.events does not exist (create_table is false)",
            failures.CLICKHOUSE_TABLE,
        ),
        ("ClickHouseWriteError: table default.events has no column(s) user_id", failures.CLICKHOUSE_TABLE),
        (
            "ClickHouseWriteError: insert into default.t failed: HTTPDriver for http://ch:8123 received ClickHouse "
            "error code 516\n Code: 516. DB::Exception: default: Authentication failed: password is incorrect, or "
            "there is no user with such name. (AUTHENTICATION_FAILED)",
            failures.CLICKHOUSE_AUTH,
        ),
        (
            "ClickHouseWriteError: insert into default.t failed: Code: 60. DB::Exception: Table default.t does not "
            "exist. (UNKNOWN_TABLE)",
            failures.CLICKHOUSE_TABLE,
        ),
        (
            "ClickHouseWriteError: insert into default.t failed: Code: 53. DB::Exception: Type mismatch. "
            "(TYPE_MISMATCH)",
            failures.CLICKHOUSE_ERROR,
        ),
    ],
)
def test_clickhouse_causes_from_the_sinks_messages(message: str, code: str) -> None:
    cause = classify(runner_line(message), 1)
    assert cause.code == code
    assert "ClickHouse" in cause.what and cause.detail.startswith("ClickHouseWriteError: ")


def test_an_invalid_spec_says_what_is_wrong() -> None:
    text = (
        "2026-11-26 10:00:00,000 ERROR clearflow.run invalid pipeline spec /run/spec.json:\n"
        "dedup.key: field 'uid' is not in the source schema\n"
        "clearflow: job exited with code 2 at 2026-11-26T10:00:01Z\n"
    )
    cause = classify(text, 2)
    assert cause.code == failures.INVALID_SPEC
    assert cause.what == (
        "The pipeline's spec is not valid, so the job did not start: dedup.key: field 'uid' is not in the source schema"
    )
    assert not cause.restart_helps


def test_an_unknown_cause_gives_the_last_meaningful_line_never_a_traceback_header() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/app/spark_jobs/run.py", line 12, in main\n'
        "    spark = build_session()\n"
        "RuntimeError: Java gateway process exited before sending its port number\n"
        "clearflow: job exited with code 1 at 2026-11-26T10:00:01Z\n"
    )
    cause = classify(text, 1)
    assert cause.code == failures.UNKNOWN
    assert cause.words == (
        "The job failed (exit code 1): RuntimeError: Java gateway process exited before sending its port number"
    )
    assert "Traceback" not in classify("Traceback (most recent call last):\n", 1).words
    assert classify("", 1).words == "The job ended (exit code 1)."
    assert classify("", None).code == failures.KILLED


def test_lease_lost() -> None:
    assert classify("", 75).code == failures.LEASE_LOST


def test_the_runners_own_error_line_is_the_line_the_cause_was_recognised_by() -> None:
    assert "[CANNOT_LOAD_STATE_STORE.HDFS_STORE_PROVIDER_OUT_OF_MEMORY]" in root_line(STATE_OOM_LOG)
    assert root_line(HEAP_LOG) == "java.lang.OutOfMemoryError: Java heap space"
    assert root_line("x\nClickHouseWriteError: boom\nmore").startswith("ClickHouseWriteError: boom")
    assert root_line("Traceback (most recent call last):\nValueError: bad") == "ValueError: bad"


def test_the_sinks_table_check_at_start_is_a_missing_table_and_counts_when_repeated() -> None:
    text = (
        "2026-11-26 10:00:00,000 ERROR clearflow.run pipeline pipeline-9 could not start: table default.gone does "
        "not exist (create_table is false)\n"
    )
    cause = classify(text, 1)
    assert cause.code == failures.CLICKHOUSE_TABLE and cause.repeats_count
    assert cause.phrase == "the ClickHouse table was missing"
    assert not classify(JOB_LOG, 1).repeats_count  # a ClickHouse that is down comes back: restarts go on
    assert classify(HEAP_LOG, 1).phrase == "the job ran out of memory"


def test_a_real_spark_out_of_memory_ends_in_a_connection_refused_traceback_and_is_told_as_out_of_memory() -> None:
    # Spark 4.2 in local mode with a 512m heap collecting 60M rows (paths shortened): the JVM dies of the
    # OutOfMemoryError, and the Python side's last words are Py4J's and "Connection refused".
    text = (FAILURES / "spark_driver_oom.log").read_text()
    assert text.rstrip().endswith("ConnectionRefusedError: [Errno 111] Connection refused")
    cause = classify(text, 1, memory="512m")
    assert cause.code == failures.OUT_OF_MEMORY and "CLEARFLOW_DRIVER_MEMORY; it ran with 512m" in cause.words
    assert cause.detail.endswith("java.lang.OutOfMemoryError: Java heap space")


def test_the_sinks_steps_at_start_are_told_as_clickhouse_also_without_the_class_name() -> None:
    text = runner_line(
        "creating table dead_letters failed: Error HTTPConnectionPool(host='127.0.0.1', port=8123): Max retries "
        "exceeded (Caused by NewConnectionError: Failed to establish a new connection: [Errno 111] Connection refused)"
    ).replace(" failed: creating", " could not start: creating")
    cause = classify(text, 1)
    assert cause.code == failures.CLICKHOUSE_UNREACHABLE and cause.detail.startswith("creating table dead_letters")


def test_a_heap_below_sparks_floor_says_so_and_what_to_set() -> None:
    # The log of a real job started with --driver-memory 300m (Spark 4.2, local mode; tests/worker/
    # test_driver_memory_cause.py starts one): Spark refuses its context; ClickHouse was not there either.
    text = (FAILURES / "driver_memory.log").read_text()
    assert "[INVALID_DRIVER_MEMORY] System memory 314572800 must be at least 471859200." in text
    cause = classify(text, 1, memory="300m")
    assert cause.code == failures.DRIVER_MEMORY_TOO_SMALL
    assert cause.words == (
        "Spark refused to start the job: its JVM had 300 MB of heap (300m asked for) and Spark needs at least "
        "450 MB. Give the job a larger heap: set CLEARFLOW_DRIVER_MEMORY to at least 512m (or to auto, which sizes "
        "it from the pipeline's rate and state), restart the worker, and deploy the pipeline again."
    )
    assert cause.detail.startswith("org.apache.spark.SparkIllegalArgumentException: [INVALID_DRIVER_MEMORY]")
    assert not cause.restart_helps  # the same heap fails the same way: the worker does not restart it
    assert root_line(text) == cause.detail


def test_a_full_disk_says_where_and_how_much_is_free_and_that_it_restarts_once_there_is_room():
    log = (
        "26/12/02 02:00:01 ERROR MicroBatchExecution: Query q-1 terminated with error\n"
        "java.io.IOException: No space left on device\n"
        "\tat java.base/java.io.FileOutputStream.writeBytes(Native Method)\n"
    )
    cause = classify(log, 1, disk=failures.DiskSpace("/var/clearflow/checkpoints", 0.4))
    assert cause.code == failures.DISK_FULL and cause.restart_helps and not cause.repeats_count
    assert cause.words.startswith("Disk full under /var/clearflow/checkpoints: 0 MB free.")
    assert "restarts on its own once there is room" in cause.words
    ch_disk = "ClickHouseWriteError: insert failed: Code: 243. No space left on device (NOT_ENOUGH_SPACE)"
    assert classify(ch_disk, 1).code != failures.DISK_FULL  # ClickHouse's own disk: its error, not the checkpoint's


def test_a_checkpoint_bucket_that_refuses_the_keys_says_access_denied_and_what_to_give() -> None:
    cause = classify((FAILURES / "s3_denied.log").read_text(), 1)  # S3A's own error, from a job against S3Proxy
    assert cause.code == failures.CHECKPOINT_STORE_DENIED and cause.repeats_count
    assert cause.what == "S3: access denied to bucket clearflow: the job cannot read or write its checkpoint there."
    assert "AWS_ACCESS_KEY_ID" in cause.change and "instance role" in cause.change


def test_a_missing_checkpoint_bucket_is_named() -> None:
    line = (
        "org.apache.hadoop.fs.s3a.UnknownStoreException: `s3a://gone/checkpoints/pipeline-3': getFileStatus on "
        "s3a://gone/checkpoints/pipeline-3: NoSuchBucket: The specified bucket does not exist"
    )
    cause = classify(runner_line(line), 1)
    assert cause.code == failures.CHECKPOINT_STORE_MISSING
    assert cause.words.startswith("S3: the bucket gone of the checkpoint does not exist. Create the bucket gone")


def test_a_checkpoint_store_answering_500_is_a_failing_store_and_the_job_restarts_on_its_own() -> None:
    # S3A's own error for a state write S3 refused with 500, from a job against S3Proxy behind tests/s3_faults.py.
    cause = classify((FAILURES / "s3_failing.log").read_text(), 1)
    assert cause.code == failures.CHECKPOINT_STORE_FAILING, cause
    assert cause.restart_helps and not cause.repeats_count  # a store that comes back, like a service that was down
    assert cause.what.startswith("S3 failed the checkpoint's requests (it answered 500 after retries)")
    assert "Nothing is lost or written twice" in cause.change
