"""Real services for the tests, started once per session on free ports in temporary directories, and the guard of
the fast tier.

Every fixture here starts the real thing (Apache Kafka, chDB's ClickHouse HTTP server, Apicurio's schema
registry, redis-server)
through `localstack.processes`, the same code `make up` uses, and stops it at the end of the session.
PostgreSQL is the machine's own server (pytest-django creates and drops a `test_` database).

Two tiers (`tests/tiers.py`): a test marked `fast` needs no service and runs in `make test-fast`; the hooks below
fail a fast test that asks for a service fixture, opens a network connection or starts a process.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localstack import processes, service_defs
from tests.kafka_security import BrokerSecurity, create_scram_users
from tests.kerberos_kdc import kdc_installed, make_realm
from tests.tiers import no_services, services_asked
from tests.tls_proxy import TlsEndpoint, TlsProxy


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("fast") is not None and (asked := services_asked(item)):
        pytest.fail(f"marked fast but asks for {', '.join(asked)}: remove the fast mark", pytrace=False)


@pytest.fixture(autouse=True)
def _fast_tier_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """In a fast test, a network connection or a new process fails the test (`tests.tiers.no_services`)."""
    if request.node.get_closest_marker("fast") is None:
        yield
        return
    with no_services() as reached:
        yield
    if reached:
        pytest.fail(f"marked fast but {'; '.join(reached)}: remove the fast mark", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _quick_password_hashes() -> Iterator[None]:
    """The tests' users get a cheap password hash: the product's PBKDF2 (a million rounds) costs 0.4-0.8 s of a
    core per user made or logged in, and most service tests make one or two. The product's hashers stay listed
    after it, so a hash made by the product's own settings still checks. A stack the tests start (`make up`) is
    its own process with its own settings."""
    from django.conf import settings
    from django.test import override_settings

    with override_settings(
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher", *settings.PASSWORD_HASHERS]
    ):
        yield


@dataclass(frozen=True)
class ClickHouseAddress:
    host: str
    port: int
    pid: int  # the server's process (its threads' CPU priority is what some tests check)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@pytest.fixture(autouse=True)
def heavy_requests_read_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Key advice and samples sent to the worker are read in the test's process instead (no worker takes them in
    most tests: the test plays the worker). A test with a real worker overrides this fixture with one that does
    nothing (tests/worker/test_heavy_requests.py)."""

    def read_here(*, request_id: str) -> bool:
        from webapp.connections.heavy_requests import heavy_request_run

        heavy_request_run(request_id=request_id)
        return True

    monkeypatch.setattr("webapp.core.queue.heavy_request_run", read_here)


@pytest.fixture(scope="session")
def service_group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[processes.ProcessGroup]:
    """One process group for the session's services; its logs are under the session's temp dir."""
    with processes.ProcessGroup(tmp_path_factory.mktemp("service-logs")) as group:
        yield group


@pytest.fixture(scope="session")
def kafka_security(service_group: processes.ProcessGroup, tmp_path_factory: pytest.TempPathFactory) -> BrokerSecurity:
    """Ports and key material (a CA generated here) of the test broker's secured listeners, and the Kerberos
    realm of its GSSAPI listener (a KDC started here, where krb5-kdc is installed)."""
    realm = None
    if kdc_installed():
        realm = make_realm(tmp_path_factory.mktemp("kerberos"))
        service_group.start(realm.service())
    return BrokerSecurity.generate(kerberos=realm)


@pytest.fixture(scope="session")
def kafka_bootstrap(
    service_group: processes.ProcessGroup, tmp_path_factory: pytest.TempPathFactory, kafka_security: BrokerSecurity
) -> str:
    """bootstrap.servers of a real Apache Kafka broker (KRaft, data in a temp dir), e.g. "127.0.0.1:40123".

    The same broker also listens with SASL PLAIN, SCRAM, TLS and mutual TLS (see `secured_kafka`): one JVM
    for every mode instead of one broker each."""
    port = processes.free_port()
    definition = service_defs.kafka_broker(
        port=port,
        data_dir=tmp_path_factory.mktemp("kafka"),
        listeners=kafka_security.listeners(),
        java_properties=(
            {"java.security.krb5.conf": str(kafka_security.kerberos.krb5_conf)} if kafka_security.kerberos else None
        ),
    )
    service_group.start(definition)
    return f"127.0.0.1:{port}"


@pytest.fixture(scope="session")
def secured_kafka(kafka_bootstrap: str, kafka_security: BrokerSecurity) -> BrokerSecurity:
    """The broker's secured listeners, with its SCRAM users created (`.connection(mode)` gives the settings)."""
    create_scram_users(kafka_bootstrap, kafka_security)
    return kafka_security


@pytest.fixture(scope="session")
def clickhouse_server(
    service_group: processes.ProcessGroup, tmp_path_factory: pytest.TempPathFactory
) -> ClickHouseAddress:
    """A real ClickHouse 26.9 HTTP server (user `default`, no password)."""
    port = processes.free_port()
    data_dir = tmp_path_factory.mktemp("clickhouse") / "data"
    server = service_group.start(service_defs.clickhouse(port=port, data_dir=data_dir))
    return ClickHouseAddress("127.0.0.1", port, server.process.pid)


@pytest.fixture(scope="session")
def clickhouse_tls(clickhouse_server: ClickHouseAddress) -> Iterator[TlsEndpoint]:
    """The same ClickHouse over HTTPS, its certificate signed by a private CA (`.ca_pem`): a TLS proxy in front."""
    proxy = TlsProxy(clickhouse_server.host, clickhouse_server.port)
    yield proxy.start()
    proxy.stop()


@pytest.fixture(scope="session")
def schema_registry_url(service_group: processes.ProcessGroup, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Confluent-compatible API of a real schema registry (Apicurio, no authentication), e.g.
    "http://127.0.0.1:40125/apis/ccompat/v7"."""
    port = processes.free_port()
    service_group.start(service_defs.schema_registry(port=port, data_dir=tmp_path_factory.mktemp("schema-registry")))
    return f"http://127.0.0.1:{port}{service_defs.REGISTRY_API_PATH}"


@dataclass(frozen=True)
class ObjectStore:
    """A real S3 API (S3Proxy) with one bucket, and the keys it takes."""

    endpoint: str
    access_key: str
    secret_key: str
    bucket: str = service_defs.S3_BUCKET

    def env(self, *, secret_key: str | None = None) -> dict[str, str]:
        """What a worker needs to keep its checkpoints there (`secret_key`: another one, which S3 refuses)."""
        return {
            "CLEARFLOW_S3_ENDPOINT": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key if secret_key is None else secret_key,
        }

    def keys(self, prefix: str) -> list[str]:
        from spark_jobs.s3_client import S3Client

        return list(S3Client.from_env(self.env()).keys(self.bucket, prefix))


@pytest.fixture(scope="session")
def s3_store(service_group: processes.ProcessGroup, tmp_path_factory: pytest.TempPathFactory) -> ObjectStore:
    """S3Proxy on a free port, with the local stack's bucket."""
    port = processes.free_port()
    store = ObjectStore(endpoint=f"http://127.0.0.1:{port}", access_key="clearflow-test", secret_key=uuid.uuid4().hex)
    data_dir = tmp_path_factory.mktemp("s3proxy")
    service_group.start(
        service_defs.s3proxy(port=port, data_dir=data_dir, identity=store.access_key, credential=store.secret_key)
    )
    return store


@pytest.fixture(scope="session")
def redis_url(service_group: processes.ProcessGroup, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A private redis-server on a free port (the machine's own one at 6379 is left alone)."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed: apt-get install -y redis-server (make test does this)")
    port = processes.free_port()
    service_group.start(service_defs.redis(port=port, data_dir=Path(tmp_path_factory.mktemp("redis"))))
    return f"redis://127.0.0.1:{port}/0"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """A test database per test run, so that two runs on one machine (two developers, CI) never collide."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    database.setdefault("TEST", {})["NAME"] = f"test_{database['NAME']}_{os.getpid()}"


@pytest.fixture
def celery_app(redis_url: str) -> Iterator[object]:
    """The web app's Celery client pointed at the session's Redis (so what the services send reaches the test's
    worker)."""
    from webapp.core.queue import app

    saved = (app.conf.broker_url, app.conf.result_backend)
    app.conf.broker_url = app.conf.result_backend = redis_url
    _drop_connections(app)
    yield app
    app.conf.broker_url, app.conf.result_backend = saved
    _drop_connections(app)


def _drop_connections(app: Any) -> None:
    """Forget pooled broker connections, so the next send connects to the broker now configured.

    kombu keeps its pools in a registry by broker URL: a pool closed but left there is handed back, closed, the
    next time that URL is configured ("Acquire on closed pool"), so the registry is emptied too."""
    import kombu.pools

    kombu.pools.reset()
    app._pool = None
    app.amqp._producer_pool = None
    app._local.__dict__.pop("backend", None)  # the result backend's connection, made for the broker before
