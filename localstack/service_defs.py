"""The local stack's services, each as a `ServiceDef` to start in a `processes.ProcessGroup`: Kafka (KRaft),
the schema registry (Apicurio), ClickHouse, Redis and S3Proxy, with their configuration files and data directories.

Shared by `make up` (localstack.up), the test suite (tests/conftest.py) and the benches: one definition of each.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from localstack.kafka_listener import KafkaListener
from localstack.processes import ServiceDef, ServiceFailed, free_port, http_ok, port_bindable, tcp_open

KAFKA_HEAP = "-Xmx512m"
KAFKA_LOG4J2 = """\
Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
"""


def _properties_value(value: str) -> str:
    """A value as java.util.Properties reads it back: PEM blocks keep their line breaks."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "")


def _kafka_controller_port(data_dir: Path, host: str, *, preferred: int | None) -> int:
    """The controller's port: the one this data directory was formatted with, else `preferred` when free.

    `format --standalone` records the controller's endpoint in the storage, so a broker started again on the
    same directory must listen there again. A new directory takes `preferred` only when nothing listens or is
    bound there: the port next to a random client port (the tests', bench's) may be any process's
    ephemeral port, and Kafka then dies at start with "Address already in use".
    """
    remembered = data_dir / "controller.port"
    formatted = (data_dir / "log" / "meta.properties").exists()
    if formatted and remembered.exists():
        return int(remembered.read_text().strip())
    if formatted and preferred is not None:
        port = preferred  # formatted before ports were remembered: with the port it was given then
    else:
        port = preferred if preferred is not None and port_bindable(host, preferred) else free_port()
    remembered.write_text(f"{port}\n")
    return port


def kafka_broker(
    *,
    host: str = "127.0.0.1",
    port: int = 9092,
    controller_port: int | None = None,
    data_dir: Path,
    listeners: Sequence[KafkaListener] = (),
    java_properties: Mapping[str, str] | None = None,
) -> ServiceDef:
    """Apache Kafka (KRaft, one node as broker and controller) from the `kafka-broker` Java bundle.

    `data_dir` keeps the generated `server.properties`, the log4j2 configuration and the log segments
    (`data_dir/log`): a broker started again on the same directory keeps its topics and offsets. Its storage is
    formatted once, the first time (what `bin/kafka-storage.sh format --standalone` does).
    The broker always listens with PLAINTEXT on `port` (also its inter-broker listener); `listeners` adds
    secured ones (SASL, TLS, mutual TLS) on their own ports; `java_properties` are the JVM-wide settings some
    need (krb5.conf's path for GSSAPI, the JWKS URL Kafka may fetch for OAUTHBEARER).
    """
    from localstack import jars

    data_dir.mkdir(parents=True, exist_ok=True)
    log_dir = data_dir / "log"
    controller_port = _kafka_controller_port(data_dir, host, preferred=controller_port)
    properties = data_dir / "server.properties"
    properties.write_text(_kafka_server_properties(host, port, controller_port, listeners, log_dir))
    log4j = data_dir / "log4j2.yaml"
    log4j.write_text(KAFKA_LOG4J2)
    java = [
        "java",
        KAFKA_HEAP,
        "-Xms64m",
        "-XX:+UseG1GC",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log4j}",
        *(f"-D{name}={value}" for name, value in (java_properties or {}).items()),
        "-cp",
        jars.classpath("kafka-broker"),
    ]
    if not (log_dir / "meta.properties").exists():
        _format_kafka_storage(java, properties, log_dir)
    return ServiceDef(
        name="kafka",
        argv=[*java, "kafka.Kafka", str(properties)],
        ready=lambda: tcp_open(host, port),
        # About 15 s on an idle machine; a machine shared by several test sessions has taken over 60 s.
        ready_timeout=180,
    )


def _kafka_server_properties(
    host: str, port: int, controller_port: int, listeners: Sequence[KafkaListener], log_dir: Path
) -> str:
    """The broker's `server.properties`: one KRaft node, PLAINTEXT on `port`, each secured listener on its own."""
    client_listeners = [f"PLAINTEXT://{host}:{port}", *(f"{lst.name}://{host}:{lst.port}" for lst in listeners)]
    protocols = [
        "PLAINTEXT:PLAINTEXT",
        "CONTROLLER:PLAINTEXT",
        *(f"{lst.name}:{lst.security_protocol}" for lst in listeners),
    ]
    listener_settings = [
        f"{key}={_properties_value(value)}" for lst in listeners for key, value in lst.properties().items()
    ]
    return "\n".join(
        [
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.bootstrap.servers={host}:{controller_port}",
            f"listeners={','.join(client_listeners)},CONTROLLER://{host}:{controller_port}",
            f"advertised.listeners={','.join(client_listeners)}",
            "controller.listener.names=CONTROLLER",
            f"listener.security.protocol.map={','.join(protocols)}",
            "inter.broker.listener.name=PLAINTEXT",
            *listener_settings,
            f"log.dirs={log_dir}",
            "num.partitions=1",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            "auto.create.topics.enable=false",
            # Records keep their producers' timestamps: with the default 7-day time retention, a topic
            # loaded with older events (a replay, the tests' fixed dates) loses them at the next retention
            # check. Local data is bounded by size instead (1 GiB per partition).
            "log.retention.ms=-1",
            "log.retention.bytes=1073741824",
            "",
        ]
    )


def _format_kafka_storage(java: list[str], properties: Path, log_dir: Path) -> None:
    """Format a new broker's storage with a new cluster id (`bin/kafka-storage.sh format --standalone`)."""
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    formatted = subprocess.run(
        [
            *java,
            "kafka.tools.StorageTool",
            "format",
            "--standalone",
            f"--cluster-id={cluster_id}",  # one argument: an id may start with "-" (URL-safe base64)
            "-c",
            str(properties),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if formatted.returncode != 0:
        raise ServiceFailed(f"formatting Kafka's storage in {log_dir} failed:\n{formatted.stdout}{formatted.stderr}")


REGISTRY_HEAP = "-Xmx256m"
# The Confluent-compatible API's root path on the registry: clients are given `http://host:port` + this.
REGISTRY_API_PATH = "/apis/ccompat/v7"


def schema_registry(*, host: str = "127.0.0.1", port: int = 8081, data_dir: Path) -> ServiceDef:
    """Apicurio Registry (the `schema-registry` bundle) serving the Confluent schema registry API at
    `http://host:port/apis/ccompat/v7`.

    Schemas are kept in an H2 database file under `data_dir`: a registry started again on the same directory
    still knows the schema ids that the records in Kafka carry. No authentication (the local stack's default).
    """
    from localstack import jars

    data_dir.mkdir(parents=True, exist_ok=True)
    api = f"http://{host}:{port}{REGISTRY_API_PATH}"
    return ServiceDef(
        name="schema-registry",
        argv=[
            "java",
            REGISTRY_HEAP,
            "-Xms64m",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            f"-Dquarkus.http.host={host}",
            f"-Dquarkus.http.port={port}",
            f"-Dquarkus.datasource.jdbc.url=jdbc:h2:file:{data_dir / 'registry'}",
            "-Dquarkus.log.level=WARN",
            '-Dquarkus.log.category."io.quarkus".level=INFO',
            "-jar",
            str(jars.registry_runner()),
        ],
        cwd=data_dir,
        ready=lambda: http_ok(f"{api}/subjects"),
        ready_timeout=180,  # about 25 s on two busy cores; Quarkus starts slower on a loaded machine
    )


def clickhouse(*, host: str = "127.0.0.1", port: int = 8123, data_dir: Path) -> ServiceDef:
    return ServiceDef(
        name="clickhouse",
        argv=[
            sys.executable,
            "-m",
            "localstack.clickhouse_server",
            "--host",
            host,
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
        ],
        ready=lambda: http_ok(f"http://{host}:{port}/ping"),
        ready_timeout=60,
    )


def redis(*, host: str = "127.0.0.1", port: int = 6379, data_dir: Path) -> ServiceDef:
    data_dir.mkdir(parents=True, exist_ok=True)
    return ServiceDef(
        name="redis",
        argv=[
            "redis-server",
            "--bind",
            host,
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(data_dir),
        ],
        ready=lambda: tcp_open(host, port),
        ready_timeout=20,
        # It holds the leases of the pipeline jobs, which run detached and outlive a stack that died: they keep
        # their lease, and run, until the next start (or `make down`) stops them and it.
        outlives_parent=True,
    )


S3PROXY_HEAP = "-Xmx192m"
S3_BUCKET = "clearflow"  # the local stack's bucket (CLEARFLOW_CHECKPOINT_ROOT=s3a://clearflow/checkpoints)


def s3proxy(
    *,
    host: str = "127.0.0.1",
    port: int = 9000,
    data_dir: Path,
    identity: str,
    credential: str,
    buckets: Sequence[str] = (S3_BUCKET,),
) -> ServiceDef:
    """S3Proxy (the `s3proxy` bundle): the S3 API at `http://host:port`, requests signed with
    `identity`/`credential` (AWS Signature V2 or V4), `buckets` made once it listens.

    Objects are kept in its memory, for as long as it runs (see the backend below). The credential travels in a
    properties file (0600) under `data_dir`, never on the command line."""
    from localstack import jars
    from spark_jobs.s3_client import S3Client, S3Error

    data_dir.mkdir(parents=True, exist_ok=True)
    client = S3Client(endpoint=f"http://{host}:{port}", region="us-east-1", access_key=identity, secret_key=credential)

    def ready() -> bool:
        if not tcp_open(host, port):
            return False
        try:
            for bucket in buckets:
                client.make_bucket(bucket)
        except S3Error:
            return False
        return True

    properties = data_dir / "s3proxy.properties"
    properties.touch(mode=0o600)
    properties.write_text(
        "\n".join(
            [
                f"s3proxy.endpoint=http://{host}:{port}",
                "s3proxy.authorization=aws-v2-or-v4",
                f"s3proxy.identity={_properties_value(identity)}",
                f"s3proxy.credential={_properties_value(credential)}",
                # In memory: jclouds' filesystem backends do not keep what S3A's empty directories are made of
                # (a `dir/` marker object listed under its own prefix), and Spark's checkpoint lists them.
                "jclouds.provider=transient",
            ]
        )
        + "\n"
    )
    # Its jar has no logging configuration, and logback's default is every request's Jetty internals.
    logging = data_dir / "logback.xml"
    logging.write_text(
        '<configuration><appender name="out" class="ch.qos.logback.core.ConsoleAppender"><encoder>'
        "<pattern>%d %level %logger{20} %msg%n</pattern></encoder></appender>"
        '<root level="WARN"><appender-ref ref="out"/></root></configuration>'
    )
    return ServiceDef(
        name="s3proxy",
        argv=[
            "java",
            S3PROXY_HEAP,
            "-Xms32m",
            f"-Dlogback.configurationFile={logging}",
            "-cp",
            jars.classpath(jars.S3PROXY_BUNDLE),
            "org.gaul.s3proxy.Main",
            "--properties",
            str(properties),
        ],
        cwd=data_dir,
        ready=ready,
        ready_timeout=60,
    )
