"""Pipelines over the REST API: create with the spec JSON, validate (errors with paths), versions, actions."""

from __future__ import annotations

import pytest

from tests.webapp.conftest import orders_spec
from tests.webapp.heavy import answered
from webapp.pipelines.models import Pipeline, PipelineVersion

URL = "/api/v1/pipelines/"


@pytest.fixture
def spec(topics, clickhouse_target):
    return orders_spec(topics.orders, clickhouse_target.database)


@pytest.fixture
def body(kafka_conn, ch_conn, spec):
    return {"name": "orders", "kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec}


@pytest.fixture
def created(api, body):
    response = api.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_create_read_list(api, created, kafka_bootstrap):
    assert created["status"] == "draft"
    assert created["current_version"] == 1
    assert created["spec"]["source"]["kafka"]["bootstrap_servers"] == kafka_bootstrap
    assert api.get(f"{URL}{created['id']}/").json()["spec"] == created["spec"]
    assert [p["name"] for p in api.get(URL).json()] == ["orders"]


def test_validation_errors_come_with_paths_and_nothing_is_written(api, body):
    body["spec"]["sink"]["columns"][1]["type"] = "Int65"
    body["spec"]["source"]["fields"][0]["type"] = "integer"
    body["spec"]["dedup"]["window"] = "9d"
    response = api.post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_spec"
    paths = {e["path"] for e in response.json()["errors"]}
    assert {"spec.sink.columns[1].type", "spec.source.fields[0].type", "spec.dedup.window"} <= paths
    assert not Pipeline.objects.exists()


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"spec": "not an object"}, "spec"),
        ({"spec": []}, "spec"),
        ({"kafka_connection": "abc"}, "kafka_connection"),
        ({"kafka_connection": 999999}, "kafka_connection"),
        ({"name": ""}, "name"),
        ({"name": "has spaces"}, "name"),
    ],
)
def test_bad_fields_are_400_with_the_field(api, body, change, path):
    body.update(change)
    response = api.post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    assert path in {e["path"] for e in response.json()["errors"]}


def test_validate_endpoint_without_saving(api, body, kafka_conn, ch_conn):
    ok = answered(api, api.post(f"{URL}validate/", {**body, "check_live": True}, format="json"))
    assert ok.status_code == 200, ok.json()
    assert ok.json()["valid"] is True

    body["spec"]["source"]["topics"] = ["missing-topic"]
    body["spec"]["sink"]["columns"].pop(1)  # `seq` is required in the table
    live = answered(api, api.post(f"{URL}validate/", {**body, "check_live": True}, format="json"))
    assert live.status_code == 400
    errors = live.json()["errors"]
    assert {"path": "spec.source.topics[0]", "message": "topic 'missing-topic' does not exist on the cluster"} in errors
    assert any(e["path"] == "spec.sink.columns" and "'seq'" in e["message"] for e in errors)
    assert not Pipeline.objects.exists()


def test_update_versions_and_actions(api, created, spec):
    pk = created["id"]
    spec["dedup"]["window"] = "30m"
    updated = api.patch(f"{URL}{pk}/", {"spec": spec, "note": "shorter"}, format="json")
    assert updated.status_code == 200
    assert updated.json()["current_version"] == 2
    versions = api.get(f"{URL}{pk}/versions/").json()
    assert [(v["number"], v["spec"]["dedup"]["window"]) for v in versions] == [(2, "30m"), (1, "1h")]
    assert versions[0]["note"] == "shorter"
    assert versions[0]["created_by"] == "owner"

    assert answered(api, api.post(f"{URL}{pk}/validate/")).json()["valid"] is True
    deployed = api.post(f"{URL}{pk}/deploy/")
    assert deployed.status_code == 200
    assert deployed.json()["status"] == "deploy_requested"
    assert deployed.json()["deployed_version"] == 2
    status = api.get(f"{URL}{pk}/status/").json()
    assert status["status"] == "deploy_requested"

    assert api.post(f"{URL}{pk}/resume/").status_code == 409
    history = api.get(f"{URL}{pk}/history/").json()
    assert [(h["from_status"], h["to_status"]) for h in history] == [("draft", "deploy_requested")]
    assert api.get(f"{URL}{pk}/runs/").json() == []

    assert api.post(f"{URL}{pk}/stop/").json()["status"] == "stopped"
    assert api.post(f"{URL}{pk}/stop/").status_code == 409
    assert api.post(f"{URL}{pk}/resume/").json()["status"] == "deploy_requested"
    api.post(f"{URL}{pk}/stop/")
    assert api.delete(f"{URL}{pk}/").status_code == 204
    assert api.get(f"{URL}{pk}/").status_code == 404
    assert not PipelineVersion.objects.exists()


def test_bad_spec_in_update_keeps_the_current_version(api, created, spec):
    spec["sink"]["order_by"] = ["not_a_column"]
    response = api.patch(f"{URL}{created['id']}/", {"spec": spec}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "spec.sink.order_by[0]"
    assert PipelineVersion.objects.count() == 1


def test_other_user_sees_nothing_and_changes_nothing(other_api, created, body):
    pk = created["id"]
    for url in (f"{URL}{pk}/", f"{URL}{pk}/status/", f"{URL}{pk}/versions/"):
        assert other_api.get(url).status_code == 404
    for action in ("deploy", "stop", "resume", "validate"):
        assert other_api.post(f"{URL}{pk}/{action}/").status_code == 404
    assert other_api.patch(f"{URL}{pk}/", {"name": "mine"}, format="json").status_code == 404
    assert other_api.delete(f"{URL}{pk}/").status_code == 404
    assert other_api.get(URL).json() == []
    # Someone else's connections cannot be used either.
    response = other_api.post(URL, {**body, "name": "theirs"}, format="json")
    assert response.status_code == 400
    assert {e["path"] for e in response.json()["errors"]} == {"kafka_connection"}
    pipeline = Pipeline.objects.get(pk=pk)
    assert (pipeline.name, pipeline.status) == ("orders", "draft")


def test_anonymous_is_401(anon_api, created):
    assert anon_api.get(f"{URL}{created['id']}/").status_code == 401
    assert anon_api.post(f"{URL}{created['id']}/deploy/").status_code == 401
    assert Pipeline.objects.get(pk=created["id"]).status == "draft"


def test_unknown_ids_are_404(api):
    assert api.get(f"{URL}424242/").status_code == 404
    assert api.post(f"{URL}424242/deploy/").status_code == 404
    response = api.get(f"{URL}424242/status/")
    assert response.json() == {
        "code": "not_found",
        "message": "Not found.",
        "errors": [{"path": "", "message": "Not found."}],
    }
