"""The services `make up` starts, in order: what is local and not already running (Redis, Kafka, ClickHouse, the
object store, the schema registry: `localstack.service_defs`), then the app's own (the web app, a Celery worker and
Celery beat)."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from urllib.parse import urlsplit

from localstack import processes, service_defs
from localstack.preflight import ensure_port_free
from localstack.stack_config import LOCAL_HOSTS, REPO_ROOT, StackConfig
from spark_jobs import object_store


def service_definitions(config: StackConfig) -> list[processes.ServiceDef]:
    """What `make up` starts, in this order: the services the app needs that are local and not running, then the
    app."""
    return [*_backing_services(config), *_app_services(config)]


def _backing_services(config: StackConfig) -> list[processes.ServiceDef]:
    """Redis, Kafka, ClickHouse, the object store and the schema registry, each where its address is local (one
    that is not is used as it is); a port another program holds is refused."""
    definitions = []
    # Redis first (it is up in a moment): the first standby job starts beside the other services (`up`).
    if config.redis_host in LOCAL_HOSTS and not processes.tcp_open(config.redis_host, config.redis_port):
        definitions.append(
            service_defs.redis(host=config.redis_host, port=config.redis_port, data_dir=config.var_dir / "redis")
        )
    if config.kafka_host in LOCAL_HOSTS:
        ensure_port_free("Kafka", config.kafka_host, config.kafka_port, "KAFKA_BOOTSTRAP_SERVERS")
        definitions.append(
            service_defs.kafka_broker(
                host=config.kafka_host,
                port=config.kafka_port,
                controller_port=config.kafka_port + 1,
                data_dir=config.var_dir / "kafka",
            )
        )
    if config.clickhouse_host in LOCAL_HOSTS:
        ensure_port_free("ClickHouse", config.clickhouse_host, config.clickhouse_port, "CLICKHOUSE_PORT")
        definitions.append(
            service_defs.clickhouse(
                host=config.clickhouse_host, port=config.clickhouse_port, data_dir=config.var_dir / "clickhouse"
            )
        )
    if object_store_is_local():
        definitions.append(local_object_store(config.var_dir))
    if config.registry_host in LOCAL_HOSTS:
        ensure_port_free("the schema registry", config.registry_host, config.registry_port, "SCHEMA_REGISTRY_URL")
        definitions.append(
            service_defs.schema_registry(
                host=config.registry_host, port=config.registry_port, data_dir=config.var_dir / "schema-registry"
            )
        )
    return definitions


def _app_services(config: StackConfig) -> list[processes.ServiceDef]:
    """The web app (gunicorn), a Celery worker and Celery beat."""
    ensure_port_free("the web app", config.web_host, config.web_port, "WEB_BIND")
    bin_dir = Path(sys.executable).parent
    return [
        processes.ServiceDef(
            name="web",
            argv=[
                str(bin_dir / "gunicorn"),
                "webapp.config.wsgi:application",
                "--bind",
                f"{config.web_host}:{config.web_port}",
                "--workers",
                "2",
                "--threads",
                "4",
                # A client that sends part of a request and waits is cut off, not left holding a thread.
                "--worker-class",
                "localstack.web_worker.ReadTimeoutThreadWorker",
                "--timeout",
                "60",
                "--graceful-timeout",
                "10",
                "--access-logfile",
                "-",
            ],
            cwd=REPO_ROOT,
            ready=lambda: processes.tcp_open(config.web_host, config.web_port),
        ),
        processes.ServiceDef(
            name="worker",
            argv=[
                str(bin_dir / "celery"),
                "-A",
                "worker.celery",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                "2",
                "--hostname",
                "clearflow@%h",
                "-Q",
                "pipelines,celery",
            ],
            cwd=REPO_ROOT,
            ready=_celery_answers,
            ready_timeout=60,
        ),
        processes.ServiceDef(
            name="beat",
            argv=[
                str(bin_dir / "celery"),
                "-A",
                "worker.celery",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(config.var_dir / "run" / "celerybeat-schedule"),
            ],
            cwd=REPO_ROOT,
            ready=lambda: True,
        ),
    ]


LOCAL_S3_ENDPOINT = "http://127.0.0.1:9000"


def object_store_is_local() -> bool:
    """Whether the checkpoints go to S3 (CLEARFLOW_CHECKPOINT_ROOT=s3a://...) on this stack's own S3Proxy (no
    CLEARFLOW_S3_ENDPOINT, or one on this machine)."""
    if not object_store.is_object_store(os.environ.get("CLEARFLOW_CHECKPOINT_ROOT", "")):
        return False
    host = urlsplit(os.environ.get(object_store.ENDPOINT_ENV) or LOCAL_S3_ENDPOINT).hostname or ""
    return host in LOCAL_HOSTS


def local_object_store(var_dir: Path) -> processes.ServiceDef:
    """S3Proxy for the checkpoints, with the checkpoint root's bucket. Its keys: the environment's
    (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), else made once and kept in var/secrets/s3proxy (0600); the worker
    and its jobs inherit them through the environment."""
    endpoint = urlsplit(os.environ.setdefault(object_store.ENDPOINT_ENV, LOCAL_S3_ENDPOINT))
    host, port = endpoint.hostname or "127.0.0.1", endpoint.port or 9000
    ensure_port_free("the S3 server (S3Proxy)", host, port, object_store.ENDPOINT_ENV)
    secret_file = var_dir / "secrets" / "s3proxy"
    if not os.environ.get("AWS_SECRET_ACCESS_KEY"):
        secret_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not secret_file.exists():
            secret_file.touch(mode=0o600)
            secret_file.write_text(secrets.token_urlsafe(24))
        os.environ["AWS_SECRET_ACCESS_KEY"] = secret_file.read_text().strip()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "clearflow")
    bucket = object_store.bucket_of(os.environ["CLEARFLOW_CHECKPOINT_ROOT"])
    return service_defs.s3proxy(
        host=host,
        port=port,
        data_dir=var_dir / "s3proxy",
        identity=os.environ["AWS_ACCESS_KEY_ID"],
        credential=os.environ["AWS_SECRET_ACCESS_KEY"],
        buckets=sorted({bucket, service_defs.S3_BUCKET}),
    )


def _celery_answers() -> bool:
    from worker.celery import app

    try:
        return bool(app.control.ping(timeout=0.5))
    except Exception:  # the broker not answering yet is "not ready", not an error
        return False
