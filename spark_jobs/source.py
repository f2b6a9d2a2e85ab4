"""Kafka through Spark's own connector (`spark-sql-kafka-0-10`, jars from `spark_jobs.jars`).

- Offsets live in Spark's checkpoint (`{topic: {partition: next offset}}`); nothing is committed to Kafka.
- Every partition of every topic is read; partitions that appear later start at their earliest offset.
- Admission control: at most `max_records_per_batch` records per micro-batch (`maxOffsetsPerTrigger`, shared
  between partitions by the connector); `Trigger.AvailableNow` stops at the offsets seen when the query started.
- The spec's connection settings map onto the connector's `kafka.*` options (`kafka_options`). Secret options
  are named in `SECRET_OPTIONS`; `REDACTION_REGEX` (set as `spark.redaction.regex`) keeps their values out of
  Spark's UI, event log and plan strings, and the Kafka client logs them as `[hidden]`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.spec import KafkaConnection, PipelineSpec

SASL_JAAS_OPTION = "kafka.sasl.jaas.config"
SSL_KEY_OPTION = "kafka.ssl.keystore.key"
SECRET_OPTIONS = (SASL_JAAS_OPTION, SSL_KEY_OPTION)
# Spark's default (secret|password|token|access key) plus the Kafka options that carry secrets: Spark redacts
# a value when its key or the value itself matches.
REDACTION_REGEX = r"(?i)secret|password|token|access[.]?key|sasl\.jaas\.config|ssl\.keystore\.key|private key"

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
# Connector defaults fetch 1 MB per partition per request; bigger fetches mean fewer round trips per batch.
_FETCH_OPTIONS = {
    "kafka.max.partition.fetch.bytes": str(16 * 1024 * 1024),
    "kafka.fetch.max.bytes": str(64 * 1024 * 1024),
}


def _jaas_quote(value: str) -> str:
    """A JAAS option value in double quotes (Kafka's parser reads backslash escapes inside quotes)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sasl_jaas_config(mechanism: str, username: str, password: str) -> str:
    return f"{_LOGIN_MODULES[mechanism]} required username={_jaas_quote(username)} password={_jaas_quote(password)};"


def pkcs8_key_pem(key_pem: str) -> str:
    """The client key as unencrypted PKCS#8 PEM, the only form Kafka's PEM keystore reads (librdkafka, used by
    the web app's connection test, also takes PKCS#1 "RSA PRIVATE KEY" and SEC1 "EC PRIVATE KEY")."""
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    except (ValueError, TypeError):
        return key_pem  # not a key cryptography reads: let Kafka report it
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def kafka_options(kafka: KafkaConnection) -> dict[str, str]:
    """The connector's `kafka.*` options for a spec's connection, secrets included (never log the result)."""
    options = {"kafka.bootstrap.servers": kafka.bootstrap_servers, "kafka.security.protocol": kafka.security_protocol}
    if kafka.security_protocol.startswith("SASL_"):
        mechanism = kafka.sasl_mechanism or "PLAIN"
        password = kafka.password.get_secret_value() if kafka.password else ""
        options["kafka.sasl.mechanism"] = mechanism
        options[SASL_JAAS_OPTION] = sasl_jaas_config(mechanism, kafka.username or "", password)
    if kafka.ssl_ca_pem:
        options["kafka.ssl.truststore.type"] = "PEM"
        options["kafka.ssl.truststore.certificates"] = kafka.ssl_ca_pem
    if kafka.ssl_certificate_pem and kafka.ssl_key_pem:
        options["kafka.ssl.keystore.type"] = "PEM"
        options["kafka.ssl.keystore.certificate.chain"] = kafka.ssl_certificate_pem
        options[SSL_KEY_OPTION] = pkcs8_key_pem(kafka.ssl_key_pem.get_secret_value())
    return options


def read_kafka(spark: SparkSession, spec: PipelineSpec) -> DataFrame:
    """The spec's topics as rows `_cf_value` (bytes), `_kafka_topic`, `_kafka_partition`, `_kafka_offset`,
    `_kafka_timestamp`: the columns `spark_jobs.transforms` starts from."""
    source = spec.source
    raw = (
        spark.readStream.format("kafka")
        .options(**_FETCH_OPTIONS)
        .options(**kafka_options(source.kafka))
        .option("subscribe", ",".join(source.topics))
        .option("startingOffsets", source.starting_offsets)
        .option("maxOffsetsPerTrigger", str(source.max_records_per_batch))
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
    )
