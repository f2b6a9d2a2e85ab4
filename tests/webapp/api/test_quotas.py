"""Per-user and per-workspace caps on heavy work: pipelines held and pipelines running; over a cap, 429 in words and
nothing saved."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.webapp.conftest import orders_spec, token_client
from tests.webapp.heavy import answered, page_answered
from webapp.pipelines.models import Pipeline
from webapp.wizard.draft_spec import load_draft_spec
from webapp.wizard.services import draft_get_or_create, draft_save_step
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
    assert (
        "has 2 pipelines, the most one workspace may have (CLEARFLOW_PIPELINES_PER_WORKSPACE)"
        in (refused.json()["message"])
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


ADVICE = "/api/v1/connections/kafka/{}/dedup-analysis/"
SAMPLE = "/api/v1/connections/kafka/{}/sample/"


def test_a_user_runs_at_most_the_key_advice_and_samples_the_caps_allow_at_once(
    api, teammate_api, owner, settings, kafka_conn, topics
):
    # No worker takes them (nothing runs them on commit in this test): each request stays in the queue.
    settings.HEAVY_REQUESTS_PER_USER = 2
    settings.HEAVY_REQUESTS_PER_WORKSPACE = 3
    advice = {"topics": [topics.orders], "keys": ["order_id"]}
    accepted = [api.post(ADVICE.format(kafka_conn.pk), advice, format="json") for _ in range(2)]
    assert [r.status_code for r in accepted] == [202, 202]
    assert accepted[0].json()["status"] == "queued" and accepted[0].json()["progress"]
    refused = api.post(ADVICE.format(kafka_conn.pk), advice, format="json")
    assert refused.status_code == 429, refused.content
    assert refused.json()["message"].startswith("2 key-advice requests already run for you; wait for one to finish")
    assert refused["Retry-After"]
    # Samples are counted apart from key advice.
    assert api.post(SAMPLE.format(kafka_conn.pk), {"topics": [topics.orders]}, format="json").status_code == 202

    # The workspace's cap counts its members together: the teammate's first is its third.
    assert teammate_api.post(ADVICE.format(kafka_conn.pk), advice, format="json").status_code == 202
    refused = teammate_api.post(ADVICE.format(kafka_conn.pk), advice, format="json")
    assert refused.status_code == 429
    assert refused.json()["message"].startswith("3 key-advice requests already run in this workspace; wait for one")

    # A request's answer is its asker's only, even for a member of the same workspace.
    assert teammate_api.get(accepted[1].json()["url"]).status_code == 404
    # One of the owner's ends: the owner may ask again (the workspace still holds three).
    done = answered(api, accepted[0])
    assert done.status_code == 200 and done.json()["scanned"] == 30
    settings.HEAVY_REQUESTS_PER_WORKSPACE = 4
    assert api.post(ADVICE.format(kafka_conn.pk), advice, format="json").status_code == 202


def test_the_dedup_step_says_in_words_when_too_much_key_advice_runs(
    owner, owner_client, api, settings, kafka_conn, topics
):
    settings.HEAVY_REQUESTS_PER_USER = 1
    draft = draft_get_or_create(user=owner)
    draft_save_step(draft=draft, step="kafka", values={"connection_id": kafka_conn.pk}, advance=True)
    draft_save_step(
        draft=draft, step="topics", spec=load_draft_spec({"source": {"topics": [topics.orders]}}), advance=True
    )
    url = reverse("wizard:key_advice", kwargs={"draft_id": draft.pk})
    measure = {"enabled": "on", "keys": ["order_id"]}
    through_the_api = api.post(ADVICE.format(kafka_conn.pk), {"topics": [topics.orders]}, format="json")
    html = owner_client.post(url, measure).content.decode()
    assert "Could not measure the duplicates: 1 key-advice requests already run for you; wait for one" in html
    assert answered(api, through_the_api).status_code == 200

    # The page asks anew as the keys change: what it asked before and no worker took yet is dropped, not counted.
    first = owner_client.post(url, measure)
    second = owner_client.post(url, measure)
    assert 'id="key-advice-reading"' in second.content.decode()
    assert "Waiting for a worker to read the events." in second.content.decode()
    assert "Replaced by a newer request before it was read." in page_answered(owner_client, first).content.decode()
    assert '<b id="scanned-count">30</b>' in page_answered(owner_client, second).content.decode()
