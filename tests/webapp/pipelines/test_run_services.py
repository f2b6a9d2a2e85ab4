"""The services behind running pipelines: checkpoint choices on redeploy, restart policy, history, delete/reset."""

from __future__ import annotations

import copy
from unittest import mock

import pytest
from django.utils import timezone

from clearflow_spec import failures
from tests.webapp.conftest import orders_spec
from webapp.alerts import services as alert_services
from webapp.alerts.models import AlertIncident, AlertNotification, RuleKind
from webapp.pipelines import run_records, services
from webapp.pipelines.models import Pipeline, PipelineRun, PipelineStatus, RunOutcome

S = PipelineStatus
URL = "/api/v1/pipelines/"


@pytest.fixture
def spec(topics, clickhouse_target):
    return orders_spec(topics.orders, clickhouse_target.database)


@pytest.fixture
def pipeline(owner, kafka_conn, ch_conn, spec):
    return services.pipeline_create(
        owner=owner, name="orders", kafka_connection=kafka_conn, clickhouse_connection=ch_conn, spec=spec
    )


def running(pipeline: Pipeline, *, restart: bool = False) -> PipelineRun:
    """As the worker leaves it: deployed (by a person, unless `restart`), a run whose query started, running."""
    changes = {} if restart else {"deploy_requested_at": timezone.now()}
    Pipeline.objects.filter(pk=pipeline.pk).update(
        status=S.RUNNING, deployed_version=pipeline.current_version, **changes
    )
    pipeline.refresh_from_db()
    return PipelineRun.objects.create(pipeline=pipeline, version=pipeline.current_version, pid=1, host="h")


def test_editing_the_dedup_keys_of_a_running_pipeline_asks_keep_or_fresh_and_saves_nothing_until_told(
    api, pipeline, spec
):
    running(pipeline)
    changed = copy.deepcopy(spec)
    changed["dedup"]["keys"] = ["order_id", "seq"]

    conflict = api.patch(f"{URL}{pipeline.pk}/", {"spec": changed}, format="json")
    assert conflict.status_code == 409
    body = conflict.json()
    assert body["extra"]["checkpoint_problems"] == ["the dedup keys changed (the dedup state is kept by key)"]
    assert body["extra"]["checkpoint_choices"] == ["keep", "fresh"]
    assert pipeline.versions.count() == 1  # nothing written

    with mock.patch("webapp.core.queue.pipeline_reconcile") as hook:
        fresh = api.patch(f"{URL}{pipeline.pk}/", {"spec": changed, "checkpoint": "fresh"}, format="json")
    assert fresh.status_code == 200, fresh.json()
    assert fresh.json()["status"] == "deploy_requested" and fresh.json()["deployed_version"] == 2
    pipeline.refresh_from_db()
    assert pipeline.reset_checkpoint is True
    assert pipeline.transitions.first().reason.endswith("starting fresh (checkpoint removed).")
    assert hook.call_count == 0  # on commit only (this test's transaction is rolled back)


def test_a_compatible_edit_of_a_running_pipeline_redeploys_and_keeps_the_checkpoint(api, pipeline, spec):
    running(pipeline)
    changed = copy.deepcopy(spec)
    changed["dedup"]["window"] = "30m"
    response = api.patch(f"{URL}{pipeline.pk}/", {"spec": changed}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "deploy_requested" and response.json()["deployed_version"] == 2
    assert Pipeline.objects.get(pk=pipeline.pk).reset_checkpoint is False


def test_a_deploy_with_an_incompatible_version_needs_a_choice_too(api, pipeline, spec):
    running(pipeline)
    Pipeline.objects.filter(pk=pipeline.pk).update(status=S.STOPPED)
    changed = copy.deepcopy(spec)
    changed["dedup"] = None
    api.patch(f"{URL}{pipeline.pk}/", {"spec": changed}, format="json")  # stopped: a new version, no redeploy
    assert Pipeline.objects.get(pk=pipeline.pk).status == S.STOPPED

    conflict = api.post(f"{URL}{pipeline.pk}/deploy/")
    assert conflict.status_code == 409 and "deduplication was switched off" in conflict.json()["message"]
    assert api.post(f"{URL}{pipeline.pk}/deploy/", {"checkpoint": "sideways"}, format="json").status_code == 400
    kept = api.post(f"{URL}{pipeline.pk}/deploy/", {"checkpoint": "keep"}, format="json")
    assert kept.status_code == 200 and kept.json()["status"] == "deploy_requested"
    assert Pipeline.objects.get(pk=pipeline.pk).reset_checkpoint is False


def test_failures_restart_with_backoff_then_give_up(pipeline, settings):
    settings.PIPELINE_RESTART_BACKOFF_SECONDS = 5
    settings.PIPELINE_RESTART_BACKOFF_MAX_SECONDS = 12
    settings.PIPELINE_RESTART_MAX_ATTEMPTS = 2
    delays = []
    for attempt in range(3):
        run = running(pipeline, restart=attempt > 0)
        run_records.pipeline_run_end(run=run, outcome=RunOutcome.FAILED, exit_code=1, reason="boom")
        before = timezone.now()
        run_records.pipeline_job_failed(pipeline=pipeline, reason="Failed: boom.")
        assert pipeline.status == S.FAILED
        delays.append(round((pipeline.restart_at - before).total_seconds()) if pipeline.restart_at else None)
    assert delays == [5, 10, None]
    assert pipeline.status_message == "Failed: boom. Gave up after 3 failed attempts (limit: 2 restarts)."
    assert run_records.restart_delay(1) == 5 and run_records.restart_delay(4) == 12
    # A deploy by a person starts the count again.
    running(pipeline)
    run_records.pipeline_job_failed(pipeline=pipeline, reason="Failed: boom.")
    assert pipeline.restart_at is not None


def test_a_job_that_ran_and_died_restarts_at_once_the_next_failure_waits(pipeline, settings):
    settings.PIPELINE_RESTART_BACKOFF_SECONDS, settings.PIPELINE_RESTART_MAX_ATTEMPTS = 5, 5
    for attempt, expected in ((0, 0), (1, 10)):
        run = running(pipeline, restart=attempt > 0)
        PipelineRun.objects.filter(pk=run.pk).update(running_at=timezone.now())  # its query had started
        run_records.pipeline_run_end(run=run, outcome=RunOutcome.FAILED, exit_code=None, reason="killed")
        before = timezone.now()
        run_records.pipeline_job_failed(pipeline=pipeline, reason="Failed: killed.")
        assert round((pipeline.restart_at - before).total_seconds()) == expected
    assert pipeline.status_message == "Failed: killed. Restarting in 10 s (restart 2 of 5)."
    assert pipeline.transitions.filter(reason="Failed: killed. Restarting now (restart 1 of 5).").exists()


def test_an_invalid_spec_is_not_restarted(pipeline):
    running(pipeline)
    run_records.pipeline_job_failed(pipeline=pipeline, reason="Failed: bad spec.", restartable=False)
    assert pipeline.status == S.FAILED and pipeline.restart_at is None
    assert "Not restarted" in pipeline.status_message


def test_stop_of_a_deploying_pipeline_whose_job_started_asks_the_worker(owner, pipeline):
    Pipeline.objects.filter(pk=pipeline.pk).update(status=S.DEPLOY_REQUESTED, deployed_version=pipeline.current_version)
    PipelineRun.objects.create(pipeline=pipeline, version=pipeline.current_version, pid=1, host="h")
    services.pipeline_stop(pipeline=pipeline, user=owner)
    assert pipeline.status == S.STOP_REQUESTED


def test_one_active_run_per_pipeline(pipeline):
    from django.db import IntegrityError, transaction

    PipelineRun.objects.create(pipeline=pipeline, pid=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        PipelineRun.objects.create(pipeline=pipeline, pid=2)
    PipelineRun.objects.filter(pipeline=pipeline).update(ended_at=timezone.now())
    PipelineRun.objects.create(pipeline=pipeline, pid=3)


def test_delete_of_a_running_pipeline_stops_its_job_and_reset_needs_confirmation(
    api, pipeline, django_capture_on_commit_callbacks
):
    run = running(pipeline)
    assert api.post(f"{URL}{pipeline.pk}/checkpoint/reset/", {"confirm": True}, format="json").status_code == 409
    with mock.patch("webapp.core.queue.pipeline_job_discard") as hook, django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"{URL}{pipeline.pk}/?remove_checkpoint=false").status_code == 204
    hook.assert_called_once_with(
        job_name=f"pipeline-{pipeline.pk}",
        job={"host": "h", "pid": 1, "process_started": None, "run_dir": ""},
        remove_checkpoint=False,
    )
    assert not PipelineRun.objects.filter(pk=run.pk).exists()


def test_start_over_removes_the_checkpoint_of_a_stopped_pipeline_once_confirmed(api, pipeline):
    Pipeline.objects.filter(pk=pipeline.pk).update(status=S.STOPPED, deployed_version=pipeline.current_version)
    assert api.post(f"{URL}{pipeline.pk}/checkpoint/reset/", {"confirm": False}, format="json").status_code == 400
    assert api.post(f"{URL}{pipeline.pk}/checkpoint/reset/", {}, format="json").status_code == 400
    assert api.post(f"{URL}{pipeline.pk}/checkpoint/reset/", {"confirm": True}, format="json").status_code == 200
    assert Pipeline.objects.get(pk=pipeline.pk).reset_checkpoint is True


def fail_run(pipeline: Pipeline, cause: failures.Cause, *, restart: bool) -> None:
    """As the watcher records a run that died of `cause` (worker.reconciler._ended)."""
    run = running(pipeline, restart=restart)
    run_records.pipeline_run_end(
        run=run,
        outcome=RunOutcome.FAILED,
        exit_code=1,
        reason=cause.words,
        cause=cause.code,
        log_tail="Traceback (most recent call last):\n  ...\njava.lang.OutOfMemoryError: Java heap space",
    )
    run_records.pipeline_job_failed(pipeline=pipeline, reason=f"Failed: {cause.words}", cause=cause)


def test_restarts_stop_early_when_the_job_keeps_running_out_of_memory_and_every_surface_says_why(
    api, owner_client, pipeline, settings
):
    settings.PIPELINE_RESTART_MAX_ATTEMPTS = 10
    settings.PIPELINE_SAME_CAUSE_LIMIT = 3
    oom = failures.classify("java.lang.OutOfMemoryError: Java heap space", 1, memory="1g")
    planned = []
    for attempt in range(3):
        fail_run(pipeline, oom, restart=attempt > 0)
        planned.append(pipeline.restart_at is not None)
    assert planned == [True, True, False]
    assert pipeline.status == S.FAILED
    words = (
        "The job ran out of memory. Give the job more memory (CLEARFLOW_DRIVER_MEMORY; it ran with 1g), make sure "
        "the machine or container holds the job memory of the pipeline's expected dedup state (its heap plus "
        "RocksDB's bound, maxMemoryUsageMB; CLEARFLOW_JOB_MEMORY_LIMIT says what one job may take), or choose a "
        "shorter dedup window."
    )
    assert pipeline.status_message == (
        f"Failed: {words} Stopped restarting: the job ran out of memory 3 times in a row; another restart cannot "
        "help until that is changed. Deploy or resume once it is."
    )

    detail = api.get(f"{URL}{pipeline.pk}/").json()
    assert detail["status_message"] == pipeline.status_message and detail["restart_at"] is None
    runs = api.get(f"{URL}{pipeline.pk}/runs/").json()
    assert [(r["cause"], r["reason"]) for r in runs] == [("out_of_memory", words)] * 3
    assert "Traceback" not in runs[0]["reason"] and "OutOfMemoryError" in runs[0]["log_tail"]

    page = owner_client.get(f"/pipelines/{pipeline.pk}/run-state/").content.decode()
    assert "Stopped restarting: the job ran out of memory 3 times in a row" in page
    assert 'data-cause="out_of_memory"' in page

    alert_services.alerts_evaluate()
    incident = AlertIncident.objects.get(pipeline=pipeline, kind=RuleKind.PIPELINE_FAILED)
    assert incident.summary.startswith(f"The pipeline failed: {words} Stopped restarting:")
    assert "Traceback" not in AlertNotification.objects.get(incident=incident).message


def test_a_service_that_is_down_or_causes_that_change_keep_the_ordinary_restarts(pipeline, settings):
    settings.PIPELINE_RESTART_MAX_ATTEMPTS = 10
    settings.PIPELINE_SAME_CAUSE_LIMIT = 2
    down = failures.classify("ClickHouseWriteError: insert failed: Connection refused", 1)
    for attempt in range(3):
        fail_run(pipeline, down, restart=attempt > 0)
        assert pipeline.restart_at is not None, pipeline.status_message
    table = failures.classify("ClickHouseWriteError: table default.t does not exist (create_table is false)", 1)
    oom = failures.classify("java.lang.OutOfMemoryError: Java heap space", 1)
    for cause in (table, oom, table):  # never twice in a row
        fail_run(pipeline, cause, restart=True)
        assert pipeline.restart_at is not None, pipeline.status_message
    fail_run(pipeline, table, restart=True)
    assert pipeline.restart_at is None
    assert "Stopped restarting: the ClickHouse table was missing 2 times in a row" in pipeline.status_message


def test_a_checkpoint_that_no_longer_fits_is_not_restarted(pipeline):
    cause = failures.classify("[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match", 1)
    run = running(pipeline)
    run_records.pipeline_run_end(run=run, outcome=RunOutcome.FAILED, exit_code=1, reason=cause.words, cause=cause.code)
    run_records.pipeline_job_failed(pipeline=pipeline, reason=f"Failed: {cause.words}", restartable=cause.restart_helps)
    assert pipeline.restart_at is None and "The checkpoint no longer fits the spec" in pipeline.status_message
