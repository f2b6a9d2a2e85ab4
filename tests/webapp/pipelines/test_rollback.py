"""Rollback ("Deploy version N"): POST /api/v1/pipelines/{id}/rollback/ makes a new version equal to N and deploys
it; a change the checkpoint cannot take is refused in words, as an edit is."""

from __future__ import annotations

import copy

import pytest
from django.utils import timezone

from tests.webapp.conftest import orders_spec
from webapp.pipelines import services
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineStatus

URL = "/api/v1/pipelines/"


@pytest.fixture
def spec(topics, clickhouse_target):
    return orders_spec(topics.orders, clickhouse_target.database)


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, spec):
    return services.pipeline_create(
        owner=owner, name="orders", kafka_connection=kafka_conn, clickhouse_connection=ch_conn, spec=spec
    )


def runs_current_version(pipeline: Pipeline) -> None:
    """As the worker leaves it: the current version deployed and running, with a run (so a checkpoint)."""
    Pipeline.objects.filter(pk=pipeline.pk).update(
        status=PipelineStatus.RUNNING,
        deployed_version=pipeline.current_version,
        deploy_requested_at=timezone.now(),
        reset_checkpoint=False,  # a fresh start asked for is done once the job runs
    )
    pipeline.refresh_from_db()
    PipelineRun.objects.filter(pipeline=pipeline).update(ended_at=timezone.now())
    PipelineRun.objects.create(pipeline=pipeline, version=pipeline.current_version, pid=1, host="h")


def test_deploy_version_n_makes_a_new_version_equal_to_n_and_deploys_it(api, pipeline, spec):
    runs_current_version(pipeline)
    changed = copy.deepcopy(spec)
    changed["dedup"]["window"] = "30m"
    assert api.patch(f"{URL}{pipeline.pk}/", {"spec": changed}, format="json").status_code == 200
    pipeline.refresh_from_db()
    runs_current_version(pipeline)

    response = api.post(f"{URL}{pipeline.pk}/rollback/", {"version": 1}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "deploy_requested"
    assert response.json()["current_version"] == response.json()["deployed_version"] == 3
    first, third = (pipeline.versions.get(number=n) for n in (1, 3))
    assert third.stored_spec == first.stored_spec and third.note == "rollback to version 1"
    assert api.get(f"{URL}{pipeline.pk}/").json()["spec"]["dedup"]["window"] == "1h"


def test_a_stopped_pipeline_is_deployed_with_version_n(api, pipeline, spec):
    changed = copy.deepcopy(spec)
    changed["dedup"]["window"] = "30m"
    api.patch(f"{URL}{pipeline.pk}/", {"spec": changed}, format="json")  # a draft: a new version, not deployed

    response = api.post(f"{URL}{pipeline.pk}/rollback/", {"version": 1}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "deploy_requested" and response.json()["deployed_version"] == 3


def test_a_version_the_checkpoint_cannot_take_is_refused_in_words_until_told(api, pipeline, spec):
    runs_current_version(pipeline)
    changed = copy.deepcopy(spec)
    changed["dedup"]["keys"] = ["order_id", "seq"]
    edit = api.patch(f"{URL}{pipeline.pk}/", {"spec": changed, "checkpoint": "fresh"}, format="json")
    assert edit.status_code == 200, edit.json()
    pipeline.refresh_from_db()
    runs_current_version(pipeline)

    conflict = api.post(f"{URL}{pipeline.pk}/rollback/", {"version": 1}, format="json")
    assert conflict.status_code == 409
    body = conflict.json()
    assert body["message"].startswith("This version cannot continue from the pipeline's checkpoint: ")
    assert body["extra"]["checkpoint_problems"] == ["the dedup keys changed (the dedup state is kept by key)"]
    assert pipeline.versions.count() == 2  # nothing written

    fresh = api.post(f"{URL}{pipeline.pk}/rollback/", {"version": 1, "checkpoint": "fresh"}, format="json")
    assert fresh.status_code == 200, fresh.json()
    assert fresh.json()["deployed_version"] == 3
    assert Pipeline.objects.get(pk=pipeline.pk).reset_checkpoint is True


def test_a_version_the_pipeline_does_not_have_is_a_400_in_words(api, pipeline):
    response = api.post(f"{URL}{pipeline.pk}/rollback/", {"version": 7}, format="json")
    assert response.status_code == 400
    assert "Pipeline 'orders' has no version 7; its versions are 1 to 1." in str(response.json())
    assert api.post(f"{URL}{pipeline.pk}/rollback/", {}, format="json").status_code == 400


def test_the_versions_list_deploys_version_n_with_a_button(owner_client, pipeline, spec):
    changed = copy.deepcopy(spec)
    changed["dedup"]["window"] = "30m"
    services.pipeline_update(pipeline=pipeline, user=pipeline.owner, spec=changed)
    page = owner_client.get(f"/pipelines/{pipeline.pk}/").content.decode()
    assert "Deploy v1</button>" in page and "Deploy v2</button>" in page  # neither is deployed yet

    done = owner_client.post(f"/pipelines/{pipeline.pk}/rollback/", {"version": "1"}, follow=True)
    assert "Deploy of version 1 requested (as a new version)." in done.content.decode()
    pipeline.refresh_from_db()
    assert pipeline.deployed_version.number == 3 and pipeline.current_version.note == "rollback to version 1"
    missing = owner_client.post(f"/pipelines/{pipeline.pk}/rollback/", {"version": "9"}, follow=True)
    assert "has no version 9; its versions are 1 to 3." in missing.content.decode()
