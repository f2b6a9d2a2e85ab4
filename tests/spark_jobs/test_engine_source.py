"""Spark's Kafka connector: jars from the install, the spec's connection as `kafka.*` options, secrets redacted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from engine_helpers import event, make_spec, produce

from clearflow_spec.client_config import kafka_connector_options as kafka_options
from clearflow_spec.spec import parse_spec
from spark_jobs.jars import CONNECTOR_BUNDLE, MSK_IAM_BUNDLE, PROTOBUF_BUNDLE, connector_jars
from spark_jobs.source import REDACTION_REGEX, SECRET_OPTIONS


def _private_key(fmt: str) -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, getattr(serialization.PrivateFormat, fmt), serialization.NoEncryption()
    ).decode()


def _connection(**kafka: object) -> object:
    data = make_spec(kafka_bootstrap="127.0.0.1:9092", clickhouse=_Address(), topics=["t"])
    data["source"]["kafka"].update(kafka)
    return parse_spec(data).source.kafka


class _Address:
    host, port = "127.0.0.1", 8123


@pytest.mark.fast
def test_connector_jars_come_from_the_install():
    jars = connector_jars()
    names = [Path(j).name for j in jars]
    bundles = (CONNECTOR_BUNDLE, MSK_IAM_BUNDLE, PROTOBUF_BUNDLE)
    assert all(Path(j).is_file() and Path(j).parent.name in bundles for j in jars)
    assert any(n.startswith("spark-sql-kafka-0-10_2.13-") for n in names)
    assert "clearflow-protobuf.jar" in names and any(n.startswith("protobuf-java-") for n in names)
    assert any(n.startswith("kafka-clients-") for n in names)
    # AWS_MSK_IAM's login module in the same list as kafka-clients (one class loader), and one kafka-clients only.
    assert any(n.startswith("aws-msk-iam-auth-") for n in names)
    assert len([n for n in names if n.startswith("kafka-clients-")]) == 1


@pytest.mark.fast
def test_sasl_and_pem_settings_map_onto_kafka_options():
    key = _private_key("TraditionalOpenSSL")  # "EC PRIVATE KEY": librdkafka reads it, Kafka's PEM store does not
    options = kafka_options(
        _connection(
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            username="svc",
            password='p"w\\d',
            ssl_ca_pem="-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n",
            ssl_certificate_pem="-----BEGIN CERTIFICATE-----\nME\n-----END CERTIFICATE-----\n",
            ssl_key_pem=key,
        )
    )
    assert options["kafka.security.protocol"] == "SASL_SSL"
    assert options["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert options["kafka.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="svc" password="p\\"w\\\\d";'
    )
    assert options["kafka.ssl.truststore.type"] == options["kafka.ssl.keystore.type"] == "PEM"
    assert options["kafka.ssl.truststore.certificates"].startswith("-----BEGIN CERTIFICATE-----\nCA")
    assert options["kafka.ssl.keystore.certificate.chain"].startswith("-----BEGIN CERTIFICATE-----\nME")
    assert options["kafka.ssl.keystore.key"].startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8


@pytest.mark.fast
def test_plaintext_has_no_security_options():
    assert kafka_options(_connection()) == {
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "kafka.security.protocol": "PLAINTEXT",
    }


@pytest.mark.fast
@pytest.mark.parametrize("option", SECRET_OPTIONS)
def test_spark_redacts_every_secret_option(option):
    assert re.search(REDACTION_REGEX.removeprefix("(?i)"), option, re.IGNORECASE)


@pytest.mark.spark
def test_the_client_key_never_reaches_the_logs_or_the_event_log(
    kafka_bootstrap, clickhouse_server, ch, new_topic, tmp_path
):
    """A PLAINTEXT connection ignores SSL settings, so the key travels through every layer without a TLS broker."""
    topic = new_topic(1)
    key = _private_key("PKCS8")
    secret = key.splitlines()[1]  # a line of the key's body
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic])
    data["source"]["kafka"]["ssl_certificate_pem"] = "-----BEGIN CERTIFICATE-----\nME\n-----END CERTIFICATE-----\n"
    data["source"]["kafka"]["ssl_key_pem"] = key
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(data))
    events_dir = tmp_path / "events"
    events_dir.mkdir()
    produce(kafka_bootstrap, topic, [(0, event(f"k{i}")) for i in range(10)])
    job = subprocess.run(
        [
            sys.executable,
            "-m",
            "spark_jobs.run",
            "--spec",
            str(spec_file),
            "--checkpoint",
            str(tmp_path / "checkpoint"),
            "--master",
            "local[2]",
            "--available-now",
            "--log-level",
            "DEBUG",
            "--conf",
            "spark.eventLog.enabled=true",
            "--conf",
            f"spark.eventLog.dir={events_dir}",
            "--conf",
            "spark.eventLog.compress=false",
        ],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    assert ch.command(f"SELECT count() FROM {data['sink']['table']}") == 10
    assert f"pipeline {data['name']}: exactly-once: default.{data['sink']['table']} (MergeTree)" in job.stderr
    logs = [path for path in events_dir.rglob("*") if path.is_file() and path.suffix != ".crc"]
    event_log = "".join(path.read_text(errors="replace") for path in logs)
    assert f"KafkaV2[Subscribe[{topic}]]" in event_log  # the batches' plans are there...
    assert secret not in event_log and "PRIVATE KEY" not in event_log  # ...without the key
    assert secret not in job.stdout + job.stderr
