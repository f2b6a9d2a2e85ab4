"""Kafka through Spark's own connector (`spark-sql-kafka-0-10`, jars from `spark_jobs.jars`).

- Offsets live in Spark's checkpoint (`{topic: {partition: next offset}}`); nothing is committed to Kafka.
- Every partition of every topic is read; partitions that appear later start at their earliest offset, and so
  do topics created later that match the source's `topic_pattern`.
- Admission control: at most `max_records_per_batch` records per micro-batch (`maxOffsetsPerTrigger`, shared
  between partitions by the connector); `Trigger.AvailableNow` stops at the offsets seen when the query started.
- The spec's connection settings map onto the connector's `kafka.*` options
  (`clearflow_spec.client_config.kafka_connector_options`). Secret options are named in `SECRET_OPTIONS`;
  `REDACTION_REGEX` (set as `spark.redaction.regex`) keeps their values out of Spark's UI, event log and plan
  strings, and the Kafka client logs them as `[hidden]`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from clearflow_spec.client_config import KAFKA_SECRET_OPTIONS, kafka_connector_options
from clearflow_spec.kafka_sasl import KRB5_CONF_PROPERTY, jvm_system_properties
from clearflow_spec.spec import KAFKA_HEADERS, KAFKA_KEY, PipelineSpec, SourceSpec

SECRET_OPTIONS = KAFKA_SECRET_OPTIONS
# Spark's default (secret|password|token|access key) plus the Kafka options that carry secrets: Spark redacts
# a value when its key or the value itself matches.
REDACTION_REGEX = r"(?i)secret|password|token|access[.]?key|sasl\.jaas\.config|ssl\.keystore\.key|private key"

# Connector defaults fetch 1 MB per partition per request; bigger fetches mean fewer round trips per batch.
_FETCH_OPTIONS = {
    "kafka.max.partition.fetch.bytes": str(16 * 1024 * 1024),
    "kafka.fetch.max.bytes": str(64 * 1024 * 1024),
}

# How often a pattern's topics are looked up again (a metadata request to the brokers).
TOPIC_DISCOVERY_MS = 15_000


def read_kafka(spark: SparkSession, spec: PipelineSpec, *, source: SourceSpec | None = None) -> DataFrame:
    """The spec's topics as rows `_cf_value` (bytes), `_kafka_topic`, `_kafka_partition`, `_kafka_offset`,
    `_kafka_timestamp`, `_kafka_key` (text), `_kafka_headers` (a map of text): the columns `spark_jobs.transforms`
    starts from. `source`: another source of the spec
    (a join's right side, `join.source`) instead of `spec.source`."""
    source = source or spec.source
    set_jvm_properties(spark, source)
    raw = (
        spark.readStream.format("kafka")
        .options(**_FETCH_OPTIONS)
        .options(**kafka_connector_options(source.kafka))
        .options(**subscription_options(source))
        .options(**starting_options(source))
        .option("maxOffsetsPerTrigger", str(source.max_records_per_batch))
        .option("includeHeaders", "true")
        .option("groupIdPrefix", f"clearflow-{spec.name}")
        # Records deleted by retention before they were read cannot be read anyway: go on from the earliest
        # offset still there (as the first engine did) instead of stopping the pipeline.
        .option("failOnDataLoss", "false")
        .load()
    )
    return raw.select(
        F.col("value").alias("_cf_value"),
        F.col("topic").alias("_kafka_topic"),
        F.col("partition").alias("_kafka_partition"),
        F.col("offset").alias("_kafka_offset"),
        F.col("timestamp").alias("_kafka_timestamp"),
        F.col("key").cast("string").alias(KAFKA_KEY),
        headers_map(F.col("headers")).alias(KAFKA_HEADERS),
    )


def set_jvm_properties(spark: SparkSession, source: SourceSpec) -> None:
    """The JVM-wide settings the connection's SASL mechanism needs (krb5.conf's path, the token endpoint Kafka
    may call, AWS keys), set through py4j before the source's first Kafka client: nothing on a command line."""
    properties = jvm_system_properties(source.kafka)
    if not properties:
        return
    system = spark._jvm.java.lang.System  # type: ignore[attr-defined]
    for name, value in properties.items():
        system.setProperty(name, value)
    if KRB5_CONF_PROPERTY in properties:
        # Java reads krb5.conf once; Spark opens sun.security.krb5 to unnamed modules, so it can be read again.
        spark._jvm.sun.security.krb5.Config.refresh()  # type: ignore[attr-defined]


def subscription_options(source: SourceSpec) -> dict[str, str]:
    """The topics read: the listed names, or a pattern (`subscribePattern`, a whole-name match). With a pattern
    the connector asks the brokers for the topics again every `TOPIC_DISCOVERY_MS`, so a topic created later
    that matches is read from its first record on the next micro-batch after that (Kafka's default is 5
    minutes)."""
    if source.topic_pattern is None:
        return {"subscribe": ",".join(source.topics)}
    return {"subscribePattern": source.topic_pattern, "kafka.metadata.max.age.ms": str(TOPIC_DISCOVERY_MS)}


def starting_options(source: SourceSpec) -> dict[str, str]:
    """Where a first start reads from: `earliest`, `latest`, or one time for every partition of the topics (a
    partition with no record at or after it starts at its end)."""
    millis = source.starting_timestamp_ms
    if millis is None:
        return {"startingOffsets": source.starting_offsets}
    return {"startingTimestamp": str(millis), "startingOffsetsByTimestampStrategy": "latest"}


def headers_map(headers: Column) -> Column:
    """The connector's headers (an array of key and bytes, NULL when there are none) as a map of UTF-8 text. A
    header sent twice keeps its last value: a map with a key twice is an error in Spark."""
    last = F.filter(
        headers,
        lambda header, i: ~F.exists(F.slice(headers, i + 2, F.size(headers)), lambda later: later.key == header.key),
    )
    entries = F.transform(
        last, lambda header: F.struct(header.key.alias("key"), header.value.cast("string").alias("value"))
    )
    return F.coalesce(F.map_from_entries(entries), F.create_map().cast("map<string,string>"))
