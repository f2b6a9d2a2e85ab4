"""Infer-schema, a spec's live check and the join step's sample are read by the worker, as key advice and samples
are: the API (or the page) answers at once with where to ask, the answer comes there, the caps count them with the
samples, and a worker that cannot be reached is said in words."""

from __future__ import annotations

import copy

import pytest
from django.urls import reverse

from tests.webapp.conftest import orders_spec
from tests.webapp.heavy import answered, page_answered
from webapp.wizard.draft_spec import load_draft_spec
from webapp.wizard.services import draft_get_or_create, draft_save_step

pytestmark = pytest.mark.django_db

KAFKA = "/api/v1/connections/kafka/{}/"
PIPELINES = "/api/v1/pipelines/"
WORKER_DOWN = "The worker could not be reached, so the events were not read: try again shortly."


@pytest.fixture
def body(kafka_conn, ch_conn, topics, clickhouse_target):
    spec = orders_spec(topics.orders, clickhouse_target.database)
    return {"kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk, "spec": spec}


def test_infer_schema_and_live_checks_answer_at_once_count_with_the_samples_and_answer_at_their_url(
    api, other_api, settings, kafka_conn, topics, body
):
    # No worker takes them here (nothing runs on commit in this test): each stays queued until the test runs it.
    settings.HEAVY_REQUESTS_PER_USER, settings.HEAVY_REQUESTS_PER_WORKSPACE = 2, 10
    inferred = api.post(KAFKA.format(kafka_conn.pk) + "infer-schema/", {"topics": [topics.orders]}, format="json")
    assert inferred.status_code == 202, inferred.content
    assert inferred.json()["status"] == "queued" and inferred["Location"] == inferred.json()["url"]
    checked = api.post(f"{PIPELINES}validate/", {**body, "check_live": True}, format="json")
    assert checked.status_code == 202, checked.content

    # Both read a sample of the topics: with the cap of 2, a sample is the third and is refused in words.
    refused = api.post(KAFKA.format(kafka_conn.pk) + "sample/", {"topics": [topics.orders]}, format="json")
    assert refused.status_code == 429, refused.content
    assert refused.json()["message"].startswith(
        "2 sample requests (samples, schema inference, live checks) already run for you; wait for one to finish"
    )
    # A spec that does not read needs no system: its 400 comes at once, counted nowhere.
    broken = copy.deepcopy(body)
    broken["spec"]["sink"]["columns"][0]["field"] = "no_such_field"
    refused = api.post(f"{PIPELINES}validate/", {**broken, "check_live": True}, format="json")
    assert refused.status_code == 400 and refused.json()["code"] == "invalid_spec", refused.content

    assert other_api.get(checked.json()["url"]).status_code == 404  # the asker's answer only
    fields = answered(api, inferred)
    assert fields.status_code == 200, fields.content
    assert fields.json()["sampled"] == 20
    assert {"order_id", "seq", "customer.name"} <= {field["path"] for field in fields.json()["fields"]}
    validation = answered(api, checked)
    assert validation.status_code == 200, validation.content
    assert validation.json()["valid"] is True and validation.json()["delivery"] is not None  # the table was asked

    # A saved pipeline's check, and a live finding: its 400 with the path, at the poll.
    created = api.post(PIPELINES, {**body, "name": "orders-checked"}, format="json")
    assert created.status_code == 201, created.content
    checked = api.post(f"{PIPELINES}{created.json()['id']}/validate/", {}, format="json")
    assert checked.status_code == 202 and f"/pipelines/{created.json()['id']}/validate/" in checked.json()["url"]
    assert answered(api, checked).json()["valid"] is True
    missing = {**body, "spec": {**body["spec"], "source": {**body["spec"]["source"], "topics": ["no-such-topic"]}}}
    found = answered(api, api.post(f"{PIPELINES}validate/", {**missing, "check_live": True}, format="json"))
    assert found.status_code == 400, found.content
    assert found.json()["errors"][0]["path"] == "spec.source.topics[0]"
    assert "no-such-topic" in found.json()["errors"][0]["message"]


def test_a_worker_that_cannot_be_reached_is_said_in_words_by_the_api_and_the_join_step(
    api, owner, owner_client, monkeypatch, django_capture_on_commit_callbacks, kafka_conn, topics, body
):
    monkeypatch.setattr("webapp.core.queue.heavy_request_run", lambda *, request_id: False)  # the broker refuses
    with django_capture_on_commit_callbacks(execute=True):
        checked = api.post(f"{PIPELINES}validate/", {**body, "check_live": True}, format="json")
    assert checked.status_code == 202
    answer = api.get(checked.json()["url"])
    assert answer.status_code == 400 and answer.json()["message"] == WORKER_DOWN

    draft = draft_get_or_create(user=owner)
    draft_save_step(draft=draft, step="kafka", values={"connection_id": kafka_conn.pk}, advance=True)
    draft_save_step(
        draft=draft, step="topics", spec=load_draft_spec({"source": {"topics": [topics.orders]}}), advance=True
    )
    url = reverse("wizard:join_sample_fetch", kwargs={"draft_id": draft.pk})
    with django_capture_on_commit_callbacks(execute=True):
        reading = owner_client.post(url, {"enabled": "on", "right_topic": topics.mixed, "count": 5})
    assert 'id="right-sample-reading"' in reading.content.decode()
    html = page_answered(owner_client, reading).content.decode()
    assert f"Could not fetch a sample: {WORKER_DOWN}" in html
