"""PostgreSQL restarted under the web app: meanwhile every page and API call answers 503 in words (never a 500),
and once it is back the same client, with the same session, is answered again; the pipeline watcher fails its
ticks while it is down and runs again after. A cluster of the test's own (tests/throwaway_postgres.py): the shared
server on 127.0.0.1:5432 is never stopped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.db import OperationalError, connection
from django.test import Client

from tests.throwaway_postgres import ThrowawayPostgres
from tests.worker.conftest import database_url
from worker import reconciler

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def own_postgres() -> Iterator[ThrowawayPostgres]:
    """The default connection moved to a cluster of the test's own, with the test database's tables; moved back
    (before pytest-django empties the test database) at the end."""
    server = ThrowawayPostgres()
    saved = dict(connection.settings_dict)
    try:
        server.start()
        server.copy_schema(source_url=database_url(), database="clearflow")
        connection.close()
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(server.port), NAME="clearflow", USER="postgres",
                                        PASSWORD="")  # fmt: skip
        yield server
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        server.remove()


def test_postgres_restarted_answers_503_in_words_meanwhile_and_recovers(own_postgres):
    user = get_user_model().objects.create_user("ops", password="ops-pass-123")
    client = Client()
    client.force_login(user)
    assert client.get("/").status_code == 200
    assert client.get("/api/v1/pipelines/").status_code == 200
    assert reconciler.watch() == 0

    own_postgres.stop()
    page = client.get("/")
    assert page.status_code == 503, page.content[:500]
    assert page["Retry-After"] == "5"
    html = page.content.decode()
    assert "The database (PostgreSQL) is not answering" in html and "Nothing was changed" in html
    answer = client.get("/api/v1/pipelines/")
    assert answer.status_code == 503
    assert answer.json()["code"] == "database_unavailable"
    assert "try again in a few seconds" in answer.json()["message"]
    login = Client().post("/login/", {"username": "ops", "password": "ops-pass-123"})
    assert login.status_code == 503  # a form sent meanwhile: refused in words, not a 500
    with pytest.raises(OperationalError):
        reconciler.watch()  # the beat's tick fails; the next one runs

    own_postgres.start()
    assert client.get("/").status_code == 200  # the same session: nothing was lost
    assert client.get("/api/v1/pipelines/").status_code == 200
    assert reconciler.watch() == 0
