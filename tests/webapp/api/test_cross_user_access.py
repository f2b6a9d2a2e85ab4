"""Every UI page and API operation, requested by a second user with the first user's ids, reveals and changes
nothing of the first user's (404 as if it did not exist, or the second user's own empty lists).

Routes come from Django's resolver and operations from the OpenAPI schema (as in test_anonymous_access), so a
new view is walked the moment it is routed.
"""

from __future__ import annotations

import itertools
import re

import pytest
from django.urls import get_resolver
from rest_framework.test import APIClient

from tests.webapp.api.test_anonymous_access import METHODS, walk
from webapp.api.models import ApiToken
from webapp.api.tokens import api_token_create
from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.models import Pipeline
from webapp.pipelines.services import pipeline_create
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_get_or_create

pytestmark = pytest.mark.django_db

MARK = "zq-owner-only"  # in every name of the first user's objects: must never appear in the second user's pages
WORDS = {"kind": ["kafka", "clickhouse"], "action": ["deploy", "stop", "resume", "delete"], "step": ["kafka"]}


@pytest.fixture
def owned(owner, kafka_bootstrap, clickhouse_server) -> dict[str, int]:
    kafka = kafka_connection_create(owner=owner, data={"name": f"{MARK}-k", "bootstrap_servers": kafka_bootstrap})
    ch = clickhouse_connection_create(
        owner=owner, data={"name": f"{MARK}-c", "host": clickhouse_server.host, "port": clickhouse_server.port}
    )
    pipeline = pipeline_create(
        owner=owner,
        name=f"{MARK}-p",
        kafka_connection=kafka,
        clickhouse_connection=ch,
        spec={
            "source": {"topics": ["t"], "fields": [{"path": "a", "type": "string"}]},
            "sink": {
                "clickhouse": {"database": "default"},
                "table": "t",
                "columns": [{"field": "a", "column": "a", "type": "String"}],
            },
        },
    )
    draft = draft_get_or_create(user=owner)
    token, _ = api_token_create(user=owner, name=f"{MARK}-t")
    return {"kafka": kafka.pk, "clickhouse": ch.pk, "pipeline": pipeline.pk, "draft": draft.pk, "token": token.pk}


def assert_untouched(owned: dict[str, int]) -> None:
    assert KafkaConnection.objects.filter(pk=owned["kafka"], name=f"{MARK}-k").exists()
    assert ClickHouseConnection.objects.filter(pk=owned["clickhouse"], name=f"{MARK}-c").exists()
    assert Pipeline.objects.get(pk=owned["pipeline"]).status == "draft"
    assert WizardDraft.objects.filter(pk=owned["draft"]).exists()
    assert ApiToken.objects.filter(pk=owned["token"]).exists()


def ui_urls(ids: list[int]) -> list[str]:
    """Every routed UI URL (not the API, not the admin) filled with each of the first user's ids."""
    urls = set()
    for route, _ in walk(get_resolver().url_patterns):
        if route.startswith(("api/", "admin/", "static/")):
            continue
        names = re.findall(r"<(?:(\w+):)?(\w+)>", route)
        choices = [ids if kind == "int" else WORDS.get(name, ["x"]) for kind, name in names]
        for values in itertools.product(*choices):
            url = route
            for value in values:
                url = re.sub(r"<(?:\w+:)?\w+>", str(value), url, count=1)
            urls.add("/" + url)
    return sorted(urls)


def test_ui_pages_as_another_user_reveal_and_change_nothing(client, other, owned):
    client.force_login(other)
    ids = sorted(set(owned.values()))
    walked = 0
    for url in ui_urls(ids):
        for method in ("get", "post"):
            response = getattr(client, method)(url)
            walked += 1
            assert response.status_code != 500, f"{method.upper()} {url}"
            if response.status_code == 200:
                assert MARK not in response.content.decode(), f"{method.upper()} {url} shows the owner's data"
            elif response.status_code == 302:
                assert MARK not in response["Location"]
    assert walked > 50
    assert_untouched(owned)


def test_api_operations_as_another_user_reveal_and_change_nothing(other, owned):
    api = APIClient()
    api.force_authenticate(other)
    paths = api.get("/api/v1/schema/?format=json").json()["paths"]
    body = {
        "name": "taken",
        "kafka_connection": owned["kafka"],
        "clickhouse_connection": owned["clickhouse"],
        "database": "default",
        "table": "t",
        "topics": ["t"],
        "fields": [{"path": "a", "type": "string", "nullable": False}],
        "spec": {"source": {"topics": ["t"], "fields": [{"path": "a", "type": "string"}]}},
    }
    operations = 0
    for path, item in paths.items():
        for method in METHODS:
            if method not in item:
                continue
            for value in sorted(set(owned.values())) if "{id}" in path else [None]:
                url = path.replace("{id}", str(value)) if value else path
                url = url.replace("{database}", "default").replace("{table}", "t")
                response = getattr(api, method)(url, body, format="json") if method != "get" else api.get(url)
                operations += 1
                text = response.content.decode()
                assert response.status_code != 500, f"{method.upper()} {url}"
                assert MARK not in text, f"{method.upper()} {url} shows the owner's data"
                if "{id}" in path:
                    assert response.status_code == 404, f"{method.upper()} {url}: {response.status_code}"
                elif method != "get" and "kafka_connection" in text + str(item[method].get("requestBody", "")):
                    assert response.status_code >= 400, f"{method.upper()} {url} used the owner's connection"
    assert operations >= 33  # every operation in the schema, once per distinct id
    assert_untouched(owned)
