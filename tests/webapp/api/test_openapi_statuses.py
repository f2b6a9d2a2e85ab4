"""The OpenAPI schema documents the statuses and content types operations really answer, beyond what generated
requests reach: errors of the JSON-lines download, a session without its CSRF token, an unacceptable Accept."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.webapp.conftest import orders_spec
from webapp.pipelines.services import pipeline_create

DOWNLOAD = "/api/v1/pipelines/{id}/dead-letters/download/"


@pytest.fixture
def openapi(anon_api) -> dict:
    return anon_api.get("/api/v1/schema/?format=json").json()


def documented(openapi: dict, method: str, path: str, status: int, content_type: str | None) -> bool:
    responses = openapi["paths"][path][method.lower()]["responses"]
    if str(status) not in responses:
        return False
    return content_type is None or content_type in responses[str(status)].get("content", {})


def answer(response) -> tuple[int, str | None]:
    content_type = response.get("Content-Type")
    return response.status_code, content_type.split(";")[0] if content_type else None


def test_the_download_documents_its_json_lines_and_its_errors_in_both_types(
    api, openapi, owner, kafka_conn, ch_conn, topics, clickhouse_target
):
    pipeline = pipeline_create(
        owner=owner,
        name="p",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topics.orders, clickhouse_target.database),
    )
    answers = [
        api.get(DOWNLOAD.format(id=pipeline.pk)),
        api.get(DOWNLOAD.format(id=pipeline.pk) + "?format=jsonl"),
        api.get(DOWNLOAD.format(id=999_999), HTTP_ACCEPT="application/x-ndjson"),
        api.get(DOWNLOAD.format(id=999_999) + "?format=jsonl"),
        api.get(DOWNLOAD.format(id=999_999)),
    ]
    seen = [answer(response) for response in answers]
    assert seen[:2] == [(200, "application/x-ndjson")] * 2
    assert seen[2:] == [(404, "application/x-ndjson"), (404, "application/x-ndjson"), (404, "application/json")]
    for status, content_type in seen:
        assert documented(openapi, "get", DOWNLOAD, status, content_type), (status, content_type)


def test_a_session_without_its_csrf_token_is_a_documented_403(owner, openapi):
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(owner)
    response = browser.post("/api/v1/connections/kafka/", {"name": "k", "bootstrap_servers": "x:1"}, format="json")
    assert answer(response) == (403, "application/json")
    assert "CSRF" in response.json()["message"]
    for path, item in openapi["paths"].items():
        for method, operation in item.items():
            if path.startswith("/api/v1/") and path != "/api/v1/health" and method in ("post", "patch", "delete"):
                assert "403" in operation["responses"], (method, path)


def test_an_unacceptable_accept_header_is_a_documented_406(api, openapi):
    response = api.get("/api/v1/pipelines/", HTTP_ACCEPT="text/html")
    assert answer(response) == (406, "application/json")
    assert documented(openapi, "get", "/api/v1/pipelines/", 406, "application/json")
