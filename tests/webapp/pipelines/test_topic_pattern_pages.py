"""A pipeline that reads the topics matching a pattern: the wizard's topics step takes the pattern and says what
it matches, the API checks it against the cluster, and the API and the pipeline page list the topics it reads
now (as the worker's lag reading found them), a topic created later included. Real broker, no Spark job."""

from __future__ import annotations

import html
import json
import uuid

import pytest
import redis
from django.urls import reverse

from clearflow_spec.protocol import lag_key, pace_key
from tests.pipeline_states import walk_to
from tests.webapp.conftest import orders_spec, produce_records
from tests.webapp.heavy import answered
from tests.webapp.wizard.test_wizard_steps import alerts, start, step_url, submit
from webapp.pipelines import services
from webapp.pipelines.models import PipelineStatus
from webapp.wizard.models import WizardDraft

pytestmark = pytest.mark.django_db


def _topic(bootstrap: str, name: str) -> str:
    produce_records(bootstrap, name, [json.dumps({"order_id": str(uuid.uuid4()), "seq": 1}).encode()])
    return name


def test_a_pattern_is_chosen_in_the_wizard_checked_by_the_api_and_its_topics_listed_on_the_page(
    owner_client, api, owner, kafka_connection, kafka_conn, ch_conn, clickhouse_target, kafka_bootstrap, redis_url,
    settings,
):  # fmt: skip
    prefix = f"shard{uuid.uuid4().hex[:8]}"
    eu = _topic(kafka_bootstrap, f"{prefix}.eu")
    pattern = rf"{prefix}\..*"

    # The wizard: topics or a pattern, a pattern that is one and that matches a topic; then what it matches.
    draft = start(owner_client)
    response = submit(owner_client, draft, "kafka", {"source": "saved", "connection": kafka_connection.pk})
    assert response.status_code == 302
    refused = {
        "orders.(eu": "topic_pattern 'orders.(eu' is not a regular expression: missing ), unterminated subpattern "
        "at position 7",
        rf"{prefix}\.none": rf"No topic on this cluster matches '{prefix}\\.none' (the whole name must match",
    }
    for given, words in refused.items():
        response = submit(owner_client, draft, "topics", {"topic_pattern": given})
        shown = [html.unescape(a) for a in alerts(response)]
        assert response.status_code == 422 and any(words in a for a in shown), shown
    response = submit(owner_client, draft, "topics", {"topic_pattern": pattern, "topics": [eu]})
    assert any("Choose topics or give a pattern, not both" in a for a in alerts(response))
    response = submit(owner_client, draft, "topics", {"topic_pattern": pattern})
    assert response.status_code == 302, alerts(response)
    draft = WizardDraft.objects.get(pk=draft.pk)
    assert draft.spec.source.topic_pattern == pattern and not draft.spec.source.topics
    shown = owner_client.get(step_url(draft, "topics")).content.decode()
    assert f"Matches now: {eu}" in shown and f'value="{prefix}\\..*"' in shown

    # The API checks the pattern against the cluster, in words at its path.
    spec = orders_spec(eu, clickhouse_target.database)
    del spec["source"]["topics"]
    body = {"name": "shards", "kafka_connection": kafka_conn.pk, "clickhouse_connection": ch_conn.pk}
    nothing = {**spec, "source": {**spec["source"], "topic_pattern": rf"{prefix}\.none"}}
    checked = answered(
        api, api.post("/api/v1/pipelines/validate/", {**body, "spec": nothing, "check_live": True}, format="json")
    )
    assert checked.status_code == 400
    assert rf"no topic on the cluster matches '{prefix}\\.none'" in json.dumps(checked.json()).replace("\\\\", "\\")
    spec["source"]["topic_pattern"] = pattern
    checked = answered(
        api, api.post("/api/v1/pipelines/validate/", {**body, "spec": spec, "check_live": True}, format="json")
    )
    assert checked.status_code == 200, checked.json()

    # Deployed: the worker's lag reading lists the topics it matches; a topic created later joins them.
    settings.REDIS_URL = redis_url
    pipeline = services.pipeline_create(
        owner=owner, name="shards", kafka_connection=kafka_conn, clickhouse_connection=ch_conn, spec=spec
    )
    walk_to(pipeline, PipelineStatus.DEPLOY_REQUESTED, deployed_version=pipeline.current_version)
    redis.Redis.from_url(redis_url).delete(lag_key(pipeline.job_name), pace_key(pipeline.job_name))
    from worker import lag, redis_state

    redis_state._client = None  # the worker's client, on this test's Redis
    page = owner_client.get(f"/pipelines/{pipeline.pk}/").content.decode()
    assert "not read yet" in page and pattern in page
    assert api.get(f"/api/v1/pipelines/{pipeline.pk}/").json()["topics_read"] is None
    assert lag.follow(pipeline)
    assert api.get(f"/api/v1/pipelines/{pipeline.pk}/").json()["topics_read"] == [eu]
    us = _topic(kafka_bootstrap, f"{prefix}.us")
    _topic(kafka_bootstrap, f"{prefix}-us")  # no dot: not matched
    assert lag.follow(pipeline)
    assert api.get(f"/api/v1/pipelines/{pipeline.pk}/").json()["topics_read"] == [eu, us]
    page = owner_client.get(f"/pipelines/{pipeline.pk}/").content.decode()
    assert f'<dd id="topics-read">{eu}, {us}</dd>' in page

    # Edited: the wizard starts from the pattern and samples the topics it read last.
    owner_client.get(reverse("wizard:wizard_edit", kwargs={"pk": pipeline.pk}))
    edit = WizardDraft.objects.get(pipeline=pipeline)
    assert f"Matches now: {eu}, {us}" in owner_client.get(step_url(edit, "topics")).content.decode()
