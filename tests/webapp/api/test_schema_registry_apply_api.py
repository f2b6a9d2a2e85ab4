"""What an idempotent apply (`clearflow apply`) needs from the API for schema registry connections, as for Kafka
and ClickHouse: find by name (only one's own), diff settings against the saved connection without saving and
without ever returning the password, and a pipeline diff that names a change of registry."""

from __future__ import annotations

import pytest

from tests.webapp.api.test_apply_api import read_only_api  # noqa: F401 - the fixture
from tests.webapp.api.test_schema_registry_api import _avro_pipeline_spec
from webapp.connections.models import SchemaRegistryConnection
from webapp.pipelines.models import PipelineVersion

REGISTRY = "/api/v1/connections/schema-registry/"
PIPELINES = "/api/v1/pipelines/"
SECRET = "registry-pw-never-shown"


@pytest.fixture
def registry_conn(api, schema_registry_url) -> dict:
    response = api.post(REGISTRY, {"name": "local registry", "url": schema_registry_url}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_registry_connections_are_found_by_name_and_only_the_owners(api, other_api, registry_conn):
    assert [c["id"] for c in api.get(REGISTRY, {"name": "local registry"}).json()] == [registry_conn["id"]]
    assert api.get(REGISTRY, {"name": "nope"}).json() == []
    assert other_api.get(REGISTRY, {"name": "local registry"}).json() == []
    assert other_api.get(REGISTRY).json() == []


def test_registry_diff_says_new_unchanged_or_which_fields_and_never_the_password(api, registry_conn):
    fields = {"name": "local registry", "url": registry_conn["url"]}
    assert api.post(f"{REGISTRY}diff/", {**fields, "name": "brand new"}, format="json").json() == {
        "exists": False,
        "id": None,
        "changes": [],
        "secrets_compared": True,
    }
    assert api.post(f"{REGISTRY}diff/", fields, format="json").json() == {
        "exists": True,
        "id": registry_conn["id"],
        "changes": [],
        "secrets_compared": True,
    }

    changed = {**fields, "url": "https://registry.example.com", "username": "alice", "password": SECRET}
    answer = api.post(f"{REGISTRY}diff/", changed, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["changes"] == [
        {"path": "url", "current": registry_conn["url"], "proposed": "https://registry.example.com", "secret": False},
        {"path": "username", "current": "", "proposed": "alice", "secret": False},
        {"path": "password", "current": None, "proposed": None, "secret": True},
    ]
    assert SECRET not in answer.content.decode()
    assert SchemaRegistryConnection.objects.get(pk=registry_conn["id"]).url == registry_conn["url"]  # nothing saved

    bad = api.post(f"{REGISTRY}diff/", {**fields, "username": "alice"}, format="json")
    assert bad.status_code == 400
    assert [e["path"] for e in bad.json()["errors"]] == ["password"]


def test_a_read_only_token_diffs_a_registry_but_cannot_save_one(read_only_api, registry_conn):  # noqa: F811
    fields = {"name": "local registry", "url": registry_conn["url"]}
    assert read_only_api.get(REGISTRY, {"name": "local registry"}).status_code == 200
    assert read_only_api.post(f"{REGISTRY}diff/", fields, format="json").json()["exists"] is True
    assert read_only_api.post(REGISTRY, {**fields, "name": "new"}, format="json").status_code == 403
    assert read_only_api.patch(f"{REGISTRY}{registry_conn['id']}/", fields, format="json").status_code == 403
    assert SchemaRegistryConnection.objects.count() == 1


def test_a_kept_password_is_no_change_and_another_one_is_a_secret_change(api, owner):
    from webapp.connections.services import schema_registry_connection_create

    fields = {"name": "secured", "url": "https://registry.example.com", "username": "alice"}
    schema_registry_connection_create(owner=owner, data={**fields, "password": "pw-1"})
    assert api.post(f"{REGISTRY}diff/", fields, format="json").json()["changes"] == []
    assert api.post(f"{REGISTRY}diff/", {**fields, "password": "pw-1"}, format="json").json()["changes"] == []
    changes = api.post(f"{REGISTRY}diff/", {**fields, "password": "pw-2"}, format="json").json()["changes"]
    assert changes == [{"path": "password", "current": None, "proposed": None, "secret": True}]


def test_an_outsiders_diff_compares_with_their_own_connections_only(api, other_api, registry_conn):
    fields = {"name": "local registry", "url": registry_conn["url"]}
    assert other_api.post(f"{REGISTRY}diff/", fields, format="json").json() == {
        "exists": False,
        "id": None,
        "changes": [],
        "secrets_compared": True,
    }


def test_pipeline_diff_keeps_names_or_refuses_a_registry_connection(
    api, other_api, owner, other, kafka_conn, ch_conn, registry_conn, avro_topic, clickhouse_target, schema_registry_url
):
    from webapp.connections.services import schema_registry_connection_create

    fields = [{"path": "order_id", "type": "uuid"}, {"path": "qty", "type": "int"}]
    spec = _avro_pipeline_spec(avro_topic, clickhouse_target.database, fields)
    body = {
        "name": "avro-orders",
        "kafka_connection": kafka_conn.pk,
        "clickhouse_connection": ch_conn.pk,
        "schema_registry_connection": registry_conn["id"],
        "spec": spec,
    }
    pipeline = api.post(PIPELINES, body, format="json").json()
    diff = f"{PIPELINES}{pipeline['id']}/diff/"

    # Left out, the pipeline's registry stays (as in an update); named again, it is no change either.
    assert api.post(diff, {"spec": spec}, format="json").json()["changes"] == []
    same = {"spec": spec, "schema_registry_connection": registry_conn["id"]}
    assert api.post(diff, same, format="json").json()["changed"] is False

    second = schema_registry_connection_create(owner=owner, data={"name": "second", "url": schema_registry_url})
    moved = api.post(diff, {"spec": spec, "schema_registry_connection": second.pk}, format="json").json()
    assert moved["changes"] == [
        {"path": "schema_registry_connection", "current": "local registry", "proposed": "second", "secret": False}
    ]

    theirs = schema_registry_connection_create(owner=other, data={"name": "theirs", "url": schema_registry_url})
    refused = api.post(diff, {"spec": spec, "schema_registry_connection": theirs.pk}, format="json")
    assert refused.status_code == 400
    assert [e["path"] for e in refused.json()["errors"]] == ["schema_registry_connection"]
    assert other_api.post(diff, {"spec": spec}, format="json").status_code == 404
    assert PipelineVersion.objects.filter(pipeline_id=pipeline["id"]).count() == 1  # nothing saved
