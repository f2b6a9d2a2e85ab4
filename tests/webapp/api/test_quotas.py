"""Per-user and per-workspace caps on heavy work: pipelines held and pipelines running; over a cap, 429 in words and
nothing saved."""

from __future__ import annotations

import pytest

from tests.webapp.conftest import orders_spec, token_client
from webapp.pipelines.models import Pipeline
from webapp.workspaces.services import member_add

pytestmark = pytest.mark.django_db

URL = "/api/v1/pipelines/"


@pytest.fixture
def body(kafka_conn, ch_conn, topics, clickhouse_target):
    spec = orders_spec(topics.orders, clickhouse_target.database)
    return {"kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec}


def test_a_user_holds_at_most_the_pipelines_the_cap_allows(api, settings, body):
    settings.PIPELINES_PER_USER = 2
    codes = [api.post(URL, {**body, "name": f"p{i}"}, format="json").status_code for i in range(2)]
    assert codes == [201, 201]
    refused = api.post(URL, {**body, "name": "p2"}, format="json")
    assert refused.status_code == 429, refused.content
    assert refused.json()["code"] == "throttled"
    assert (
        "You have 2 pipelines, the most one user may have (CLEARFLOW_PIPELINES_PER_USER)" in refused.json()["message"]
    )
    assert sorted(Pipeline.objects.values_list("name", flat=True)) == ["p0", "p1"]


def test_a_user_runs_at_most_the_pipelines_the_cap_allows(api, settings, body):
    settings.RUNNING_PIPELINES_PER_USER = 1
    first, second = (api.post(URL, {**body, "name": name}, format="json").json()["id"] for name in ("a", "b"))
    assert api.post(f"{URL}{first}/deploy/").status_code == 200
    refused = api.post(f"{URL}{second}/deploy/")
    assert refused.status_code == 429, refused.content
    assert "You run 1 pipelines, the most one user may run at once" in refused.json()["message"]
    assert Pipeline.objects.get(pk=second).status == "draft"
    # Redeploying the one that runs starts no new job.
    assert api.post(f"{URL}{first}/deploy/").status_code == 200


@pytest.fixture
def teammate_api(owner, other, kafka_conn):
    """`other` as an editor of the owner's workspace (where the connections are), through the API."""
    member_add(workspace=kafka_conn.workspace, actor=owner, username="other", role="editor")
    return token_client(other)


def test_a_workspace_holds_at_most_the_pipelines_its_cap_allows_whoever_creates_them(
    api, teammate_api, settings, body, kafka_conn
):
    settings.PIPELINES_PER_WORKSPACE = 2
    ws = {"workspace": kafka_conn.workspace_id}
    assert api.post(URL, {**body, **ws, "name": "mine"}, format="json").status_code == 201
    assert teammate_api.post(URL, {**body, **ws, "name": "theirs"}, format="json").status_code == 201
    refused = teammate_api.post(URL, {**body, **ws, "name": "one-more"}, format="json")
    assert refused.status_code == 429, refused.content
    assert "has 2 pipelines, the most one workspace may have (CLEARFLOW_PIPELINES_PER_WORKSPACE)" in (
        refused.json()["message"]
    )
    assert sorted(Pipeline.objects.values_list("name", flat=True)) == ["mine", "theirs"]


def test_a_workspace_runs_at_most_the_pipelines_its_cap_allows_whoever_starts_them(
    api, teammate_api, settings, body, kafka_conn
):
    settings.RUNNING_PIPELINES_PER_WORKSPACE = 1
    ws = {"workspace": kafka_conn.workspace_id}
    first = api.post(URL, {**body, **ws, "name": "a"}, format="json").json()["id"]
    second = teammate_api.post(URL, {**body, **ws, "name": "b"}, format="json").json()["id"]
    assert api.post(f"{URL}{first}/deploy/").status_code == 200
    refused = teammate_api.post(f"{URL}{second}/deploy/")
    assert refused.status_code == 429, refused.content
    assert "The workspace runs 1 pipelines, the most one workspace may run at once" in refused.json()["message"]
    assert Pipeline.objects.get(pk=second).status == "draft"
