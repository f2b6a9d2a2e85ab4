"""Per-user caps on heavy work: pipelines held and pipelines running; over a cap, 429 in words and nothing saved."""

from __future__ import annotations

import pytest

from tests.webapp.conftest import orders_spec
from webapp.pipelines.models import Pipeline

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
