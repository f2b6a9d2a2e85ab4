"""The fast tier's guard: a fast test that reaches a service fails, even when the code under test catches it."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.tiers import ServiceReached, no_services, services_asked

pytestmark = pytest.mark.fast  # needs no service: `make test-fast`


def test_a_connection_is_refused_and_remembered_even_when_caught():
    # Caught, as code that tolerates a service being down catches it.
    with no_services() as reached, contextlib.suppress(Exception):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    assert reached and "127.0.0.1" in reached[0]


def test_a_process_is_refused():
    with no_services() as reached, pytest.raises(ServiceReached):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert reached == [f"started a process {[sys.executable, '-c', 'pass']!r}"]


def test_service_fixtures_and_the_database_are_named():
    item = SimpleNamespace(fixturenames=["tmp_path", "kafka_bootstrap", "db"], get_closest_marker=lambda name: None)
    assert services_asked(item) == ["db", "kafka_bootstrap"]
    marked = SimpleNamespace(fixturenames=[], get_closest_marker=lambda name: name == "django_db" or None)
    assert services_asked(marked) == ["the database (django_db)"]
