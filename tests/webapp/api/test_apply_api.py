"""What an idempotent apply needs from the API: find by name, diff a spec or a connection against what is saved
(without saving), read-only tokens (403 on every change, never on a read), and who the caller is."""

from __future__ import annotations

import copy

import pytest

from tests.webapp.conftest import orders_spec, token_client
from webapp.api.tokens import api_token_create
from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.pipelines.models import Pipeline, PipelineVersion

URL = "/api/v1/pipelines/"
KAFKA = "/api/v1/connections/kafka/"
CLICKHOUSE = "/api/v1/connections/clickhouse/"


@pytest.fixture
def spec(topics, clickhouse_target):
    return orders_spec(topics.orders, clickhouse_target.database)


@pytest.fixture
def pipeline(api, kafka_conn, ch_conn, spec) -> dict:
    body = {"name": "orders", "kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec}
    response = api.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.fixture
def read_only_api(owner):
    from rest_framework.test import APIClient

    client = APIClient()
    _, text = api_token_create(user=owner, name="dashboards", read_only=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {text}")
    return client


def test_pipelines_and_connections_are_found_by_name_and_only_the_owners(api, other_api, pipeline, kafka_conn, ch_conn):
    assert [p["id"] for p in api.get(URL, {"name": "orders"}).json()] == [pipeline["id"]]
    assert api.get(URL, {"name": "nope"}).json() == []
    assert [c["id"] for c in api.get(KAFKA, {"name": "local kafka"}).json()] == [kafka_conn.pk]
    assert [c["id"] for c in api.get(CLICKHOUSE, {"name": "local clickhouse"}).json()] == [ch_conn.pk]
    assert other_api.get(URL, {"name": "orders"}).json() == []
    assert other_api.get(KAFKA, {"name": "local kafka"}).json() == []


def test_diff_of_the_saved_spec_is_unchanged_and_a_change_is_listed_by_path(api, pipeline, spec):
    diff = api.post(f"{URL}{pipeline['id']}/diff/", {"spec": spec}, format="json")
    assert diff.status_code == 200, diff.json()
    assert diff.json() == {
        "changed": False,
        "current_version": 1,
        "changes": [],
        "redeploys": False,
        "checkpoint_problems": [],
    }
    # The stored spec as the API returns it (connections' details filled in) is unchanged too.
    assert api.post(f"{URL}{pipeline['id']}/diff/", {"spec": pipeline["spec"]}, format="json").json()["changes"] == []

    changed = copy.deepcopy(spec)
    changed["dedup"]["window"] = "2h"
    changed["filter"] = "amount > 0"
    diff = api.post(f"{URL}{pipeline['id']}/diff/", {"spec": changed}, format="json").json()
    assert diff["changed"] is True
    assert {(c["path"], c["current"], c["proposed"]) for c in diff["changes"]} == {
        ("spec.dedup.window", "1h", "2h"),
        ("spec.filter", None, "amount > 0"),
    }
    assert PipelineVersion.objects.filter(pipeline_id=pipeline["id"]).count() == 1  # nothing saved


def test_diff_names_another_connection_and_refuses_a_bad_spec_with_paths(api, owner, pipeline, spec, kafka_bootstrap):
    from webapp.connections.services import kafka_connection_create

    second = kafka_connection_create(owner=owner, data={"name": "second", "bootstrap_servers": kafka_bootstrap})
    diff = api.post(f"{URL}{pipeline['id']}/diff/", {"spec": spec, "kafka_connection": second.pk}, format="json")
    assert diff.json()["changes"] == [
        {"path": "kafka_connection", "current": "local kafka", "proposed": "second", "secret": False}
    ]

    spec["sink"]["columns"][1]["type"] = "Int65"
    refused = api.post(f"{URL}{pipeline['id']}/diff/", {"spec": spec}, format="json")
    assert refused.status_code == 400
    assert refused.json()["errors"] == [
        {"path": "spec.sink.columns[1].type", "message": "unknown ClickHouse type 'Int65'"}
    ]


def test_diff_of_someone_elses_pipeline_is_a_404(other_api, pipeline, spec):
    assert other_api.post(f"{URL}{pipeline['id']}/diff/", {"spec": spec}, format="json").status_code == 404


def test_connection_diff_says_new_unchanged_or_which_fields_and_never_a_secret(api, ch_conn, clickhouse_server):
    fields = {"name": "local clickhouse", "host": clickhouse_server.host, "port": clickhouse_server.port}
    new = api.post(f"{CLICKHOUSE}diff/", {**fields, "name": "brand new"}, format="json").json()
    assert new == {"exists": False, "id": None, "changes": [], "secrets_compared": True}
    assert api.post(f"{CLICKHOUSE}diff/", fields, format="json").json() == {
        "exists": True,
        "id": ch_conn.pk,
        "changes": [],
        "secrets_compared": True,
    }

    answer = api.post(f"{CLICKHOUSE}diff/", {**fields, "port": 9999, "password": "s3cret-value"}, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["changes"] == [
        {"path": "port", "current": clickhouse_server.port, "proposed": 9999, "secret": False},
        {"path": "password", "current": None, "proposed": None, "secret": True},
    ]
    assert "s3cret-value" not in answer.content.decode()
    assert ClickHouseConnection.objects.get(pk=ch_conn.pk).port == clickhouse_server.port  # nothing saved

    bad = api.post(f"{CLICKHOUSE}diff/", {**fields, "database": "no-dashes"}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["path"] == "database"


def test_a_read_only_token_cannot_guess_a_stored_password_through_diff(api, read_only_api, owner, clickhouse_server):
    from webapp.connections.services import clickhouse_connection_create

    fields = {"name": "guarded", "host": clickhouse_server.host, "port": clickhouse_server.port}
    clickhouse_connection_create(owner=owner, data={**fields, "password": "right-password"})
    answers = [
        read_only_api.post(f"{CLICKHOUSE}diff/", {**fields, "password": guess}, format="json")
        for guess in ("right-password", "wrong-password")
    ]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[0].json() == answers[1].json()
    assert answers[0].json()["changes"] == [] and answers[0].json()["secrets_compared"] is False
    # A full token still compares (that is what `clearflow diff` shows as "secret changes").
    full = api.post(f"{CLICKHOUSE}diff/", {**fields, "password": "wrong-password"}, format="json").json()
    assert full["changes"] == [{"path": "password", "current": None, "proposed": None, "secret": True}]
    assert full["secrets_compared"] is True


def test_a_kafka_secret_left_out_is_kept_and_the_same_secret_is_no_change(api, owner, kafka_bootstrap):
    from webapp.connections.services import kafka_connection_create

    kafka_connection_create(
        owner=owner,
        data={
            "name": "sasl",
            "bootstrap_servers": kafka_bootstrap,
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_username": "app",
            "sasl_password": "pw-1",
        },
    )
    fields = {
        "name": "sasl",
        "bootstrap_servers": kafka_bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_username": "app",
    }
    assert api.post(f"{KAFKA}diff/", fields, format="json").json()["changes"] == []
    assert api.post(f"{KAFKA}diff/", {**fields, "sasl_password": "pw-1"}, format="json").json()["changes"] == []
    changes = api.post(f"{KAFKA}diff/", {**fields, "sasl_password": "pw-2"}, format="json").json()["changes"]
    assert changes == [{"path": "sasl_password", "current": None, "proposed": None, "secret": True}]


def test_a_read_only_token_reads_and_diffs_but_every_change_is_a_403(
    read_only_api, pipeline, spec, kafka_conn, ch_conn
):
    assert read_only_api.get(URL).status_code == 200
    assert read_only_api.get(f"{URL}{pipeline['id']}/").status_code == 200
    assert read_only_api.post(f"{URL}{pipeline['id']}/diff/", {"spec": spec}, format="json").status_code == 200
    connections = {"kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk}
    assert read_only_api.post(f"{URL}validate/", {"spec": spec, **connections}, format="json").status_code == 200

    changed = copy.deepcopy(spec)
    changed["dedup"]["window"] = "2h"
    for method, url, body in (
        ("patch", f"{URL}{pipeline['id']}/", {"spec": changed}),
        ("post", f"{URL}{pipeline['id']}/deploy/", {}),
        ("delete", f"{URL}{pipeline['id']}/", None),
        ("post", URL, {"name": "x", "kafka_connection": kafka_conn.pk, "clickhouse_connection": 1, "spec": spec}),
        ("patch", f"{KAFKA}{kafka_conn.pk}/", {"name": "renamed"}),
        ("post", "/api/v1/tokens/", {"name": "a write token"}),
    ):
        response = getattr(read_only_api, method)(url, body, format="json")
        assert response.status_code == 403, (method, url, response.json())
        assert "read-only" in response.json()["message"]
    assert Pipeline.objects.get().status == "draft"
    assert PipelineVersion.objects.count() == 1
    assert KafkaConnection.objects.get().name == "local kafka"


def test_a_read_only_token_gets_403_whether_or_not_the_object_exists(read_only_api):
    assert read_only_api.post(f"{URL}987654/deploy/", {}, format="json").status_code == 403


def test_me_names_the_user_and_the_token(api, read_only_api, owner):
    me = api.get("/api/v1/me/").json()
    assert me["username"] == "owner" and me["token"]["name"] == "tests" and me["token"]["read_only"] is False
    assert read_only_api.get("/api/v1/me/").json()["token"]["read_only"] is True
    other_token = token_client(owner)
    assert other_token.get("/api/v1/me/").status_code == 200


def test_tokens_page_creates_a_read_only_token(client, owner):
    client.force_login(owner)
    page = client.post("/account/tokens/", {"action": "create", "name": "grafana", "read_only": "on"})
    assert page.status_code == 200
    assert "read only" in page.content.decode()
    from webapp.api.models import ApiToken

    assert ApiToken.objects.get(name="grafana").read_only is True


def test_openapi_documents_the_read_only_403_on_changes_only(client, db):
    paths = client.get("/api/v1/schema/?format=json").json()["paths"]

    def refuses_read_only_tokens(method: str, path: str) -> bool:
        return "read-only API token" in paths[path][method]["responses"].get("403", {}).get("description", "")

    assert refuses_read_only_tokens("post", "/api/v1/pipelines/")
    assert refuses_read_only_tokens("patch", "/api/v1/pipelines/{id}/")
    assert refuses_read_only_tokens("delete", "/api/v1/pipelines/{id}/")
    assert not refuses_read_only_tokens("get", "/api/v1/pipelines/")
    assert not refuses_read_only_tokens("post", "/api/v1/pipelines/{id}/diff/")
    assert not refuses_read_only_tokens("post", "/api/v1/connections/kafka/diff/")
    assert not refuses_read_only_tokens("post", "/api/v1/pipelines/validate/")
    assert {p["name"] for p in paths["/api/v1/pipelines/"]["get"]["parameters"]} == {"name"}
