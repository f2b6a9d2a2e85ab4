"""`make up`: the whole local stack in the foreground, on real services, with embedded defaults.

Starts what is local and not already running: the Apache Kafka broker, ClickHouse, the schema registry
(Apicurio, Confluent-compatible API), Redis (only if none answers), then the web app (gunicorn), a Celery worker
and Celery beat. Addresses come from the same environment variables docker-compose.yml sets; an address that is
not on this machine is used as it is (point KAFKA_BOOTSTRAP_SERVERS at your own cluster and no local broker
starts).

The stack owns the pipeline jobs its worker starts. Ctrl-C, SIGTERM (`make down`) or a closed terminal (SIGHUP)
stop, in this order: beat, the worker and the web app (so nothing starts a job meanwhile); every pipeline job
(SIGTERM: it finishes its micro-batch; SIGKILL past its grace), recorded as stopped with the stack, so the next
start runs it again from its checkpoint; then ClickHouse, the schema registry, Kafka and Redis, which the jobs
needed until their last batch (`localstack.stopping`: each step all at once and timed, 28 s at most in all).

A stack that could not stop (SIGKILL, the OOM killer) takes its services with it: each gets SIGTERM from the
kernel when this process dies (the parent-death signal). Its pipeline jobs run detached by design (a worker's
restart must not stop them): the next `make up`, or `make down`, finds them and whatever else the dead stack
recorded in `var/run/stack.json` and still runs (`localstack.leftovers`), stops it the same way, and says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from localstack import leftovers, processes, run_state, service_defs, stopping
from spark_jobs import object_store

REPO_ROOT = Path(__file__).resolve().parents[1]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
# Set for the stack `make up DETACH=1` starts in the background (its banner says how to stop it).
DETACHED_VARIABLE = "CLEARFLOW_UP_DETACHED"


class StackError(RuntimeError):
    """A problem the user can fix; its message says how."""


@dataclass(frozen=True)
class StackConfig:
    var_dir: Path
    kafka_host: str
    kafka_port: int
    clickhouse_host: str
    clickhouse_port: int
    redis_host: str
    redis_port: int
    web_host: str
    web_port: int
    database_url: str
    registry_host: str = "127.0.0.1"
    registry_port: int = 8081

    @classmethod
    def from_env(cls) -> StackConfig:
        env = os.environ
        kafka_host, kafka_port = _host_port(env.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092").split(",")[0])
        redis = urlsplit(env.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
        web_host, web_port = _host_port(env.get("WEB_BIND", "127.0.0.1:8000"))
        registry = urlsplit(env.get("SCHEMA_REGISTRY_URL", f"http://127.0.0.1:8081{service_defs.REGISTRY_API_PATH}"))
        return cls(
            var_dir=Path(env.get("CLEARFLOW_VAR_DIR", str(REPO_ROOT / "var"))).resolve(),
            kafka_host=kafka_host,
            kafka_port=kafka_port,
            clickhouse_host=env.get("CLICKHOUSE_HOST", "127.0.0.1"),
            clickhouse_port=int(env.get("CLICKHOUSE_PORT", "8123")),
            redis_host=redis.hostname or "127.0.0.1",
            redis_port=redis.port or 6379,
            web_host=web_host,
            web_port=web_port,
            database_url=env.get("DATABASE_URL", "postgres://clearflow@127.0.0.1:5432/clearflow"),
            registry_host=registry.hostname or "127.0.0.1",
            registry_port=registry.port or 8081,
        )

    @property
    def url(self) -> str:
        return f"http://{self.web_host}:{self.web_port}"

    @property
    def registry_url(self) -> str:
        return f"http://{self.registry_host}:{self.registry_port}{service_defs.REGISTRY_API_PATH}"


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.strip().rpartition(":")
    return host or "127.0.0.1", int(port)


def _say(message: str) -> None:
    print(f"clearflow: {message}", flush=True)


# --- before starting -----------------------------------------------------------------------------------------


def acquire_lock(var_dir: Path) -> int:
    """One `make up` per var/ directory; a second one says who holds it."""
    run_dir = var_dir / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    lock_path = run_dir / "up.lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 64).decode().strip() or "unknown"
        os.close(fd)
        raise StackError(
            f"ClearFlow is already running here (pid {holder}, lock {lock_path}). "
            f"Use that one, or stop it with Ctrl-C in its terminal or `kill {holder}`."
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def check_prerequisites(config: StackConfig) -> None:
    missing = []
    if shutil.which("java") is None:
        missing.append("Java 17 for Spark: apt-get install -y openjdk-17-jre-headless")
    needs_redis_server = config.redis_host in LOCAL_HOSTS and not processes.tcp_open(
        config.redis_host, config.redis_port
    )
    if needs_redis_server and shutil.which("redis-server") is None:
        missing.append("Redis: apt-get install -y redis-server (or set REDIS_URL to a running Redis)")
    if missing:
        raise StackError("missing prerequisites:\n  - " + "\n  - ".join(missing))


def ensure_port_free(name: str, host: str, port: int, variable: str) -> None:
    """Refuse a port another program listens on, naming it (the stack's own leftovers are stopped before)."""
    if processes.tcp_open(host, port):
        holder = processes.port_holder(port)
        raise StackError(
            f"port {port} for {name} is already in use by another program ({holder or 'of another user'}). "
            f"Stop it, or choose another address with {variable}."
        )


def ensure_database(database_url: str) -> None:
    """Create the PostgreSQL database if the server answers and the database is missing."""
    import psycopg

    parts = urlsplit(database_url)
    if parts.scheme not in {"postgres", "postgresql"}:
        return
    name = parts.path.lstrip("/")
    admin_url = parts._replace(path="/postgres").geturl()
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if not exists:
                conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(name)))
                _say(f"created PostgreSQL database {name}")
    except psycopg.OperationalError as error:
        hint = (
            "start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"
            if shutil.which("pg_ctlcluster")
            else "install it with: apt-get install -y postgresql (or set DATABASE_URL)"
        )
        raise StackError(f"PostgreSQL does not answer ({error.args[0].strip()}); {hint}") from None


def manage(*args: str, log_path: Path) -> None:
    with open(log_path, "ab") as log:
        result = subprocess.run(
            [sys.executable, str(REPO_ROOT / "manage.py"), *args],
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if result.returncode != 0:
        raise StackError(f"manage.py {' '.join(args)} failed; see {log_path}")


# --- the services --------------------------------------------------------------------------------------------


def service_definitions(config: StackConfig) -> list[processes.ServiceDef]:
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
    ensure_port_free("the web app", config.web_host, config.web_port, "WEB_BIND")
    bin_dir = Path(sys.executable).parent
    definitions += [
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
    return definitions


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


# --- main ----------------------------------------------------------------------------------------------------


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop


def started_at() -> tuple[float, str]:
    """When the user's command started, and its name: `make up` exports its start (so installing, system checks
    and migrations count in the banner's time); run directly, it is this process's start."""
    exported = os.environ.get("CLEARFLOW_UP_STARTED_AT", "")
    try:
        return float(exported), "`make up`"
    except ValueError:
        return time.time(), "`python -m localstack up`"


def up() -> int:
    started, command = started_at()
    config = StackConfig.from_env()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
    os.environ["CLEARFLOW_VAR_DIR"] = str(config.var_dir)
    # gunicorn's workers share one cache (login throttles, the health answer), as docker-compose sets it up.
    redis_url = urlsplit(os.environ.get("REDIS_URL", f"redis://{config.redis_host}:{config.redis_port}/0"))
    os.environ.setdefault("CLEARFLOW_CACHE_URL", redis_url._replace(path="/3").geturl())
    for stop_signal in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # SIGHUP: the terminal closed
        signal.signal(stop_signal, _raise_stop)
    log_dir = config.var_dir / "log"
    log_dir.mkdir(parents=True, exist_ok=True)
    lock_fd = -1
    try:
        lock_fd = acquire_lock(config.var_dir)
        stopping.stop_earlier_stack(config.var_dir, run_root=stopping.run_root_of(config.var_dir))
        check_prerequisites(config)
        ensure_database(config.database_url)
        _say("migrating the database")
        manage("migrate", "--noinput", log_path=log_dir / "setup.log")
        manage("ensure_admin", log_path=log_dir / "setup.log")
        manage("collectstatic", "--noinput", log_path=log_dir / "setup.log")
        definitions = service_definitions(config)
    except StackError as error:
        _say(str(error))
        return 1
    except _Stop:
        return 130

    group = processes.ProcessGroup(log_dir, end_with_parent=True)
    try:
        for definition in definitions:
            service = group.start(definition, spawned=lambda _service: _record_stack(config, group, started))
            _say(f"{service.name} is up (pid {service.process.pid}, log {service.log_path})")
            if processes.tcp_open(config.redis_host, config.redis_port):
                keep_standby_jobs()
        _print_banner(config, seconds=time.time() - started, since=command)
        stopping.prepare()
        restarts: dict[str, int] = {}
        while True:
            for service in group.exited():
                _start_again(group, service, restarts, record=lambda _service: _record_stack(config, group, started))
            time.sleep(1)
    except processes.ServiceFailed as error:
        _say(str(error))
        return 1
    except _Stop:
        _say("stopping")
        return 0
    finally:
        for stop_signal in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # a second Ctrl-C must not cut this short
            signal.signal(stop_signal, signal.SIG_IGN)
        stop_began = time.monotonic()
        stopped_jobs = stopping.stop_stack(group, run_root=stopping.run_root_of(config.var_dir))
        run_state.remove_stack(config.var_dir)
        run_state.write_last_stop(config.var_dir, {"at": time.time(), "pipeline_jobs": stopped_jobs})
        with contextlib.suppress(OSError):
            os.close(lock_fd)
        _say(f"stopped in {time.monotonic() - stop_began:.1f} s")


# A service that keeps dying is left down after this many starts again (its log says why; `make up` again).
MAX_RESTARTS = 5


def _start_again(
    group: processes.ProcessGroup,
    service: processes.RunningService,
    restarts: dict[str, int],
    *,
    record: Callable[[processes.RunningService], None],
) -> None:
    """A service of the stack exited (killed, crashed): start it again on the same address and data, up to
    MAX_RESTARTS times, saying so with the time it took; the pipelines' jobs, detached, carry on meanwhile (a
    worker started again adopts them)."""
    code, count = service.process.returncode, restarts.get(service.name, 0)
    group.services.remove(service)
    if count >= MAX_RESTARTS:
        _say(
            f"{service.name} exited with code {code} again; not started again after {MAX_RESTARTS} restarts: see "
            f"{service.log_path}, then stop the stack and start it again"
        )
        return
    restarts[service.name] = count + 1
    _say(f"{service.name} exited with code {code}; starting it again ({count + 1} of {MAX_RESTARTS})")
    began = time.monotonic()
    try:
        again = group.start(service.definition, spawned=record)
    except processes.ServiceFailed as error:
        _say(str(error))  # it is in the group, exited: the next pass counts another restart
        return
    _say(f"{service.name} is up again after {time.monotonic() - began:.1f} s (pid {again.process.pid})")


def _record_stack(config: StackConfig, group: processes.ProcessGroup, started: float) -> None:
    """What runs, for `make status` and `make down` in another shell."""
    services = []
    for service in group.services:
        with contextlib.suppress(psutil.Error):  # one that exited already: nothing left to find again
            services.append(
                {
                    **leftovers.process_record(service.process.pid),
                    "name": service.name,
                    "log": str(service.log_path),
                    "address": _address_of(config, service.name),
                }
            )
    run_state.write_stack(
        config.var_dir, {"pid": os.getpid(), "started_at": started, "url": config.url, "services": services}
    )


def _address_of(config: StackConfig, name: str) -> str:
    return {
        "kafka": f"{config.kafka_host}:{config.kafka_port}",
        "clickhouse": f"http://{config.clickhouse_host}:{config.clickhouse_port}",
        "redis": f"{config.redis_host}:{config.redis_port}",
        "web": config.url,
    }.get(name, "")


def keep_standby_jobs() -> None:
    """Fill the worker's pool of standby jobs while the other services start (one at a time, from when Redis
    answers; `worker.reconciler.keep_standby`), so that a deploy right after the banner finds a job's JVM and
    Spark session up. Then the worker's watcher keeps it full. The stack's stop stops them with the jobs."""
    try:
        import django

        stopping.quiet_django_logs()
        django.setup()
        from worker.reconciler import keep_standby

        keep_standby(niceness=0)
    except Exception as error:  # the watcher starts them on its first tick: the first deploy may start cold
        _say(f"could not start a standby job ({error}); the worker starts them")


def login_words(var_dir: Path, *, to_terminal: bool) -> str:
    """The banner's login. The password is shown on a terminal only: a banner that goes to a file (`make up
    DETACH=1` writes var/log/up.log, which anyone on the machine may read; or output redirected) names the file
    that holds it instead, var/secrets/admin_password (mode 0600, readable by its owner alone)."""
    password_file = var_dir / "secrets" / "admin_password"
    if not to_terminal:
        return f"admin / the password in {password_file} (`cat` it; it is kept out of logs)"
    password = os.environ.get("ADMIN_PASSWORD") or password_file.read_text().strip()
    return f"admin / {password}"


def _print_banner(config: StackConfig, *, seconds: float, since: str) -> None:
    login = login_words(config.var_dir, to_terminal=sys.stdout.isatty())
    stop = (
        "Stop: `make down`. What runs: `make status`."
        if os.environ.get(DETACHED_VARIABLE)
        else "Stop: Ctrl-C (or `make down`). What runs: `make status`."
    )
    print(
        f"""
  ClearFlow is up, {seconds:.0f} s after {since} started.

    Open        {config.url}/
    Log in      {login}
    Health      {config.url}/api/v1/health
    API docs    {config.url}/api/v1/docs/
    Kafka       {config.kafka_host}:{config.kafka_port}      ClickHouse  http://{config.clickhouse_host}:{config.clickhouse_port}
    Schemas     {config.registry_url}  (Confluent-compatible schema registry)
    Logs        {config.var_dir / "log"}/

  Demo events: `make demo-data` in another terminal. {stop}
""",
        flush=True,
    )
