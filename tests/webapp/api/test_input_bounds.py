"""No input gives a 500: deep nesting, huge bodies, huge expressions and types are 4xx in the JSON error shape."""

from __future__ import annotations

import json

import pytest

from tests.webapp.conftest import orders_spec

PIPELINES = "/api/v1/pipelines/"


def assert_error_shape(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) >= {"code", "message", "errors"}
    return body


@pytest.fixture
def spec_body(kafka_conn, ch_conn, topics, clickhouse_target):
    def build(**changes) -> dict:
        spec = orders_spec(topics.orders, clickhouse_target.database)
        spec.update(changes)
        return {"name": "p", "kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec}

    return build


@pytest.mark.parametrize("depth", [100, 5_000, 50_000])
def test_deeply_nested_json_is_a_400(api, depth):
    body = "[" * depth + "]" * depth
    response = api.post(PIPELINES, body, content_type="application/json")
    assert "nested" in assert_error_shape(response, 400)["message"]


def test_a_3_mb_body_gets_the_json_error_shape(api):
    body = json.dumps({"name": "p", "note": "x" * 3_000_000})
    assert_error_shape(api.post(PIPELINES, body, content_type="application/json"), 413)


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        (
            {"filter": "java_method('java.lang.System', 'getenv', 'DJANGO_SECRET_KEY') IS NOT NULL"},
            "spec.filter",
            "'java_method'",
        ),
        ({"filter": "(" * 3000 + "seq > 0" + ")" * 3000}, "spec.filter", "nested too deeply"),
        ({"filter": " OR ".join(["seq = 1"] * 150_000)}, "spec.filter", "too long"),
        (
            {"transforms": [{"name": "t", "expression": "try_reflect('java.lang.System', 'exit', 0)", "type": "int"}]},
            "spec.transforms[0].expression",
            "'try_reflect'",
        ),
    ],
)
def test_dangerous_or_huge_expressions_are_a_400_naming_the_field(api, spec_body, change, path, message):
    for url in (PIPELINES, f"{PIPELINES}validate/"):
        body = assert_error_shape(api.post(url, spec_body(**change), format="json"), 400)
        found = {error["path"]: error["message"] for error in body["errors"]}
        assert message in found[path], found


def test_deeply_nested_column_type_is_a_400(api, spec_body):
    data = spec_body()
    data["spec"]["sink"]["columns"][0]["type"] = "Array(" * 3000 + "String" + ")" * 3000
    body = assert_error_shape(api.post(PIPELINES, data, format="json"), 400)
    assert any(error["path"] == "spec.sink.columns[0].type" for error in body["errors"])


def test_clickhouse_connection_database_is_an_identifier(api):
    for database in ("a;DROP TABLE x", "a'b", "tab\there", "x\x01"):
        response = api.post(
            "/api/v1/connections/clickhouse/", {"name": "c", "host": "127.0.0.1", "database": database}, format="json"
        )
        body = assert_error_shape(response, 400)
        assert body["errors"][0]["path"] == "database"

