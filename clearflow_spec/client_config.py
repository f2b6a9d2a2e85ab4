"""The client settings built from a connection spec (`clearflow_spec.connections`), one function per client library:

- `librdkafka_config(kafka)`: confluent-kafka (the web app's tests, topic lists, samples, replays);
- `kafka_connector_options(kafka)`: Spark's Kafka connector (the job's Java Kafka client);
- `clickhouse_connect_kwargs(clickhouse, ca_cert=...)`: clickhouse-connect (the web app and the job's writer);
- `schema_registry_client_conf(registry, ca_file=...)`: confluent-kafka's SchemaRegistryClient.

The SASL mechanisms beyond a user name and a password are `clearflow_spec.kafka_sasl`'s. The functions return
secrets in clear, so their results are never logged. No Spark and no Django import here.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from clearflow_spec.connections import (
    ClickHouseConnectionSpec,
    KafkaConnectionSpec,
    SchemaRegistryConnectionSpec,
)
from clearflow_spec.kafka_sasl import connector_sasl_options, jaas_quote, librdkafka_sasl_config

# -- Kafka: librdkafka (confluent-kafka) ------------------------------------------------------------------


# GSSAPI, OAUTHBEARER and AWS_MSK_IAM: their settings are `clearflow_spec.kafka_sasl`'s.
_TOKEN_MECHANISMS = ("GSSAPI", "OAUTHBEARER", "AWS_MSK_IAM")


def librdkafka_config(kafka: KafkaConnectionSpec) -> dict[str, Any]:
    """librdkafka properties for `kafka`, secrets included (never log the result). ValueError in words for a
    mechanism the bundled librdkafka lacks (GSSAPI: the web app's reads take `webapp.connections.kafka_gssapi`)."""
    config: dict[str, Any] = {
        "bootstrap.servers": kafka.bootstrap_servers,
        "security.protocol": kafka.security_protocol,
    }
    if kafka.uses_sasl and kafka.sasl_mechanism in _TOKEN_MECHANISMS:
        config.update(librdkafka_sasl_config(kafka))
    elif kafka.uses_sasl:
        config["sasl.mechanism"] = kafka.sasl_mechanism or "PLAIN"
        config["sasl.username"] = kafka.sasl_username or ""
        config["sasl.password"] = kafka.sasl_password.get_secret_value() if kafka.sasl_password else ""
    if kafka.ssl_ca_pem:
        config["ssl.ca.pem"] = kafka.ssl_ca_pem
    if kafka.ssl_certificate_pem and kafka.ssl_key_pem:
        config["ssl.certificate.pem"] = kafka.ssl_certificate_pem
        config["ssl.key.pem"] = kafka.ssl_key_pem.get_secret_value()
    return config


# -- Kafka: Spark's connector (the Java client) -------------------------------------------------------------

SASL_JAAS_OPTION = "kafka.sasl.jaas.config"
SSL_KEY_OPTION = "kafka.ssl.keystore.key"
KAFKA_SECRET_OPTIONS = (SASL_JAAS_OPTION, SSL_KEY_OPTION)

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def sasl_jaas_config(mechanism: str, username: str, password: str) -> str:
    return f"{_LOGIN_MODULES[mechanism]} required username={jaas_quote(username)} password={jaas_quote(password)};"


def pkcs8_key_pem(key_pem: str) -> str:
    """The client key as unencrypted PKCS#8 PEM, the only form Kafka's PEM keystore reads (librdkafka also takes
    PKCS#1 "RSA PRIVATE KEY" and SEC1 "EC PRIVATE KEY")."""
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    except (ValueError, TypeError):
        return key_pem  # not a key cryptography reads: let Kafka report it
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def kafka_connector_options(kafka: KafkaConnectionSpec) -> dict[str, str]:
    """Spark's Kafka connector `kafka.*` options for `kafka`, secrets included (never log the result)."""
    options = {"kafka.bootstrap.servers": kafka.bootstrap_servers, "kafka.security.protocol": kafka.security_protocol}
    if kafka.uses_sasl and kafka.sasl_mechanism in _TOKEN_MECHANISMS:
        options["kafka.sasl.mechanism"] = kafka.sasl_mechanism
        options.update(connector_sasl_options(kafka))
    elif kafka.uses_sasl:
        mechanism = kafka.sasl_mechanism or "PLAIN"
        password = kafka.sasl_password.get_secret_value() if kafka.sasl_password else ""
        options["kafka.sasl.mechanism"] = mechanism
        options[SASL_JAAS_OPTION] = sasl_jaas_config(mechanism, kafka.sasl_username or "", password)
    if kafka.ssl_ca_pem:
        options["kafka.ssl.truststore.type"] = "PEM"
        options["kafka.ssl.truststore.certificates"] = kafka.ssl_ca_pem
    if kafka.ssl_certificate_pem and kafka.ssl_key_pem:
        options["kafka.ssl.keystore.type"] = "PEM"
        options["kafka.ssl.keystore.certificate.chain"] = kafka.ssl_certificate_pem
        options[SSL_KEY_OPTION] = pkcs8_key_pem(kafka.ssl_key_pem.get_secret_value())
    return options


# -- ClickHouse: clickhouse-connect ---------------------------------------------------------------------------


def clickhouse_connect_kwargs(clickhouse: ClickHouseConnectionSpec, *, ca_cert: str | None) -> dict[str, Any]:
    """clickhouse-connect `get_client` arguments for `clickhouse`, secrets included (never log the result).

    `ca_cert` is the path of a file holding `clickhouse.ssl_ca_pem` (`write_ca_file`): the client reads the CA
    from a file only. The caller owns the file, as it knows how long its client lives.
    """
    if clickhouse.ssl_ca_pem and not ca_cert:
        raise ValueError("the connection has a CA certificate: pass the path of its file (write_ca_file)")
    return {
        "host": clickhouse.host,
        "port": clickhouse.port,
        "username": clickhouse.username,
        "password": clickhouse.password.get_secret_value(),
        "database": clickhouse.database,
        "secure": clickhouse.secure,
        "verify": clickhouse.verify,
        "ca_cert": ca_cert if clickhouse.ssl_ca_pem else None,
    }


# -- Schema registry: confluent-kafka's SchemaRegistryClient -------------------------------------------------


def schema_registry_client_conf(
    registry: SchemaRegistryConnectionSpec, *, ca_file: str | None, timeout: float | None = None
) -> dict[str, Any]:
    """SchemaRegistryClient settings for `registry`, secrets included (never log the result).

    `ca_file` is the path of a file holding `registry.ssl_ca_pem` (`write_ca_file`), which the client reads
    from a file only; the caller owns the file. `timeout` (seconds) bounds each request and turns the client's
    retries off (the web app answers a person; the job keeps the client's defaults).
    """
    if registry.ssl_ca_pem and not ca_file:
        raise ValueError("the connection has a CA certificate: pass the path of its file (write_ca_file)")
    conf: dict[str, Any] = {"url": registry.url}
    if timeout is not None:
        conf["timeout"] = timeout
        conf["max.retries"] = 0
    if registry.username and registry.password:
        conf["basic.auth.user.info"] = f"{registry.username}:{registry.password.get_secret_value()}"
    if registry.ssl_ca_pem:
        conf["ssl.ca.location"] = ca_file
    elif not registry.verify:
        conf["ssl.ca.location"] = False  # httpx: no verification
    return conf


def write_ca_file(pem: str) -> str:
    """`pem` in a new private temporary file (mode 0600, unpredictable name); the caller removes it."""
    handle, path = tempfile.mkstemp(prefix="clearflow-ca-", suffix=".pem")
    with os.fdopen(handle, "w") as out:
        out.write(pem)
    return path


__all__ = [
    "KAFKA_SECRET_OPTIONS",
    "clickhouse_connect_kwargs",
    "kafka_connector_options",
    "librdkafka_config",
    "schema_registry_client_conf",
    "write_ca_file",
]
