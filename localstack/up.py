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

Its steps: the addresses (`localstack.stack_config`), what comes before any service (`localstack.preflight`: the
lock, the prerequisites, the database), the services in order (`localstack.stack_services`), then this module
starts them, starts again one that exits, records what runs and prints the banner.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from localstack import leftovers, processes, run_state, stopping
from localstack.preflight import StackError, acquire_lock, check_prerequisites, ensure_database, manage
from localstack.stack_config import DETACHED_VARIABLE, StackConfig
from localstack.stack_services import service_definitions


def _say(message: str) -> None:
    print(f"clearflow: {message}", flush=True)


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
        jobs_line = fill_standby_pool()
        _print_banner(config, seconds=time.time() - started, since=command, jobs=jobs_line)
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


def keep_standby_jobs() -> bool:
    """Fill the worker's pool of standby jobs while the other services start (one at a time, from when Redis
    answers; `worker.reconciler.keep_standby`), so that a deploy right after the banner finds a job's JVM and
    Spark session up. Then the worker's watcher keeps it full. The stack's stop stops them with the jobs.
    False when it could not (said in words): the watcher starts them on its first tick."""
    try:
        import django

        stopping.quiet_django_logs()
        django.setup()
        from worker.reconciler import keep_standby

        keep_standby(niceness=0)
    except Exception as error:  # the watcher starts them on its first tick: the first deploy may start cold
        _say(f"could not start a standby job ({error}); the worker starts them")
        return False
    return True


# How long `make up` waits for its pool of standby jobs before it prints the banner anyway (one JVM start is
# about 10-20 s on 2 idle cores; 4 standbys one after the other about a minute).
STANDBY_POOL_WAIT_SECONDS = 90.0


def fill_standby_pool(*, wait_seconds: float = STANDBY_POOL_WAIT_SECONDS) -> str:
    """Keep starting standbys until the pool is full and every one is ready, up to `wait_seconds`: a person
    deploys right after the banner, often several pipelines one after the other, and each deploy that finds a
    standby ready reaches its first row in seconds instead of a cold JVM start. Returns the banner's words."""
    from django.conf import settings

    from worker import jobs, standby

    wanted = settings.PIPELINE_STANDBY_JOBS
    if wanted <= 0:
        return "standby jobs are off (CLEARFLOW_STANDBY=0): each deploy starts its job's JVM"
    if jobs.is_cluster(settings.SPARK_MASTER):
        return f"jobs run on {settings.SPARK_MASTER}"
    run_root = Path(settings.CLEARFLOW_RUN_ROOT)
    deadline = time.monotonic() + wait_seconds
    ready = 0
    while time.monotonic() < deadline:
        if not keep_standby_jobs():
            break
        ready = sum(found.ready for found in standby.waiting(run_root))
        if ready >= wanted:
            return f"{ready} standby jobs ready: a deploy starts in a JVM that is up"
        time.sleep(0.5)
    if standby.failed_lately(run_root):
        why = f"a standby job failed to start: see the newest {standby.root(run_root)}/*/job.log"
    else:
        why = f"the rest were still starting after {wait_seconds:.0f} s (a busy machine); the worker goes on"
    return f"{ready} of {wanted} standby jobs ready: {why}"


def login_words(var_dir: Path, *, to_terminal: bool) -> str:
    """The banner's login. The password is shown on a terminal only: a banner that goes to a file (`make up
    DETACH=1` writes var/log/up.log, which anyone on the machine may read; or output redirected) names the file
    that holds it instead, var/secrets/admin_password (mode 0600, readable by its owner alone)."""
    password_file = var_dir / "secrets" / "admin_password"
    if not to_terminal:
        return f"admin / the password in {password_file} (`cat` it; it is kept out of logs)"
    password = os.environ.get("ADMIN_PASSWORD") or password_file.read_text().strip()
    return f"admin / {password}"


def _print_banner(config: StackConfig, *, seconds: float, since: str, jobs: str) -> None:
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
    Jobs        {jobs}

  Demo events: `make demo-data` in another terminal. {stop}
""",
        flush=True,
    )
