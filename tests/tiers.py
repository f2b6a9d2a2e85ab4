"""The two test tiers. A test marked `fast` needs no service: no database, no network, no process, no Spark
(`make test-fast` runs these alone, in seconds; `make test` runs them first). Every other test is the service
tier. `tests/conftest.py` applies the guard below to every fast test, so a fast test that reaches a service fails
loudly, also where the code under test catches the error."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# What a fast test may not ask for: the services, the database, the browser, Spark.
SERVICE_FIXTURES = frozenset(
    {
        "service_group", "kafka_bootstrap", "clickhouse_server", "redis_url", "celery_app", "celery_worker",
        "db", "transactional_db", "django_db_setup", "live_server", "page", "browser", "spark",
    }
)  # fmt: skip


class ServiceReached(RuntimeError):
    """A fast test reached for a service."""


def services_asked(item: Any) -> list[str]:
    """The service fixtures (and the database mark) a test asks for."""
    asked = sorted(SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())))
    if item.get_closest_marker("django_db"):
        asked.append("the database (django_db)")
    return asked


@contextmanager
def no_services() -> Iterator[list[str]]:
    """Inside: a network connection or a new process raises ServiceReached; what was tried is listed in the
    yielded list (which stays filled when the code under test catches the error)."""
    reached: list[str] = []

    def refuse(what: str) -> None:
        reached.append(what)
        raise ServiceReached(f"a fast test {what}")

    def connect(self: socket.socket, address: object, *args: object) -> None:
        refuse(f"opened a connection to {address!r}")

    def popen(self: subprocess.Popen, args: object, *rest: object, **kwargs: object) -> None:
        refuse(f"started a process {args!r}")

    saved = (socket.socket.connect, socket.socket.connect_ex, subprocess.Popen.__init__)
    socket.socket.connect, socket.socket.connect_ex, subprocess.Popen.__init__ = connect, connect, popen  # type: ignore[method-assign, assignment]
    try:
        yield reached
    finally:
        socket.socket.connect, socket.socket.connect_ex, subprocess.Popen.__init__ = saved  # type: ignore[method-assign]
