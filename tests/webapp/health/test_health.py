"""The health endpoint and page, against real services: open to everyone, 503 naming what is down."""

from __future__ import annotations

import pytest
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from localstack.processes import free_port
from tests.conftest import ClickHouseAddress

pytestmark = pytest.mark.django_db


@pytest.fixture
def real_services(
    settings: SettingsWrapper,
    kafka_bootstrap: str,
    clickhouse_server: ClickHouseAddress,
    redis_url: str,
    celery_app: object,
) -> SettingsWrapper:
    settings.KAFKA_BOOTSTRAP_SERVERS = kafka_bootstrap
    settings.CLICKHOUSE_HOST = clickhouse_server.host
    settings.CLICKHOUSE_PORT = clickhouse_server.port
    settings.REDIS_URL = redis_url
    # No worker runs in these tests: forget a watcher tick left in the session's Redis by a worker test.
    import redis

    from clearflow_spec.protocol import WATCHER_TICK_KEY

    redis.Redis.from_url(redis_url).delete(WATCHER_TICK_KEY)
    return settings


def test_health_reports_each_component_and_names_those_down(
    client: Client, real_services: SettingsWrapper, owner
) -> None:
    # No Celery worker runs in this test, so exactly that one is down. Versions are shown to logged-in users.
    client.force_login(owner)
    response = client.get("/api/v1/health")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "down"
    assert body["down"] == ["celery"]
    components = body["components"]
    assert components["kafka"]["ok"] and components["kafka"]["detail"].startswith("1 broker(s)")
    assert components["clickhouse"] == {**components["clickhouse"], "ok": True}
    assert "26.9" in components["clickhouse"]["detail"]
    assert components["database"]["ok"] and components["redis"]["ok"] and components["spark"]["ok"]
    assert "no Celery worker answered" in components["celery"]["detail"]


def test_a_stopped_clickhouse_is_named_without_revealing_its_address(
    client: Client, real_services: SettingsWrapper
) -> None:
    real_services.CLICKHOUSE_PORT = free_port()  # nothing listens there

    body = client.get("/api/v1/health").json()

    assert "clickhouse" in body["down"]
    assert body["components"]["clickhouse"]["ok"] is False
    assert str(real_services.CLICKHOUSE_PORT) not in str(body)


def test_health_page_shows_the_same_to_a_person_without_login(client: Client, real_services: SettingsWrapper) -> None:
    response = client.get("/health")

    assert response.status_code == 503
    page = response.content.decode()
    assert "Down: celery" in page
    assert 'data-component="kafka"' in page


def test_anonymous_health_shows_no_versions(client: Client, real_services: SettingsWrapper) -> None:
    body = client.get("/api/v1/health").json()

    assert body["down"] == ["celery"]
    assert body["components"]["clickhouse"]["detail"] == "answers"
    assert "26.9" not in str(body) and "Redis " not in str(body) and "Java" not in str(body)


def test_health_answers_from_a_short_cache(client: Client, real_services: SettingsWrapper) -> None:
    first = client.get("/api/v1/health").json()
    real_services.CLICKHOUSE_PORT = free_port()  # ClickHouse "goes away": the cached answer still stands

    assert client.get("/api/v1/health").json() == first
