"""A job that keeps dying of the same cause, with the real worker and real job processes: the watcher stops
restarting it early, and the API, the pipeline page and the pipeline-failed alert say what happened and what to
change, never a traceback line."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from tests.worker.helpers import JOB_TIMEOUT, URL, api_spec, create_pipeline, status_of, wait_for
from webapp.alerts import services as alert_services
from webapp.alerts.models import AlertIncident, AlertNotification, RuleKind

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]

SAME_CAUSE_LIMIT = 2


def test_a_job_that_keeps_failing_on_a_missing_table_stops_restarting_and_says_why(
    api, owner, kafka_conn, ch_conn, topic, celery_worker, worker_env
):
    worker_env.update({"CLEARFLOW_SAME_CAUSE_LIMIT": str(SAME_CAUSE_LIMIT), "CLEARFLOW_RESTART_MAX_ATTEMPTS": "10"})
    spec = api_spec(topic, f"gone_{uuid.uuid4().hex[:8]}")
    spec["sink"]["create_table"] = False  # the job's table check at start fails, the same way each time
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=spec)
    celery_worker.start()
    assert api.post(f"{URL}{pk}/deploy/").json()["status"] == "deploy_requested"

    def failed_for_good() -> dict | None:
        status = status_of(api, pk)
        return status if status["status"] == "failed" and status["restart_at"] is None else None

    final = wait_for(failed_for_good, timeout=JOB_TIMEOUT * SAME_CAUSE_LIMIT, interval=1)
    words = (
        "The ClickHouse table (or a column of it) the spec writes to does not exist. Create the table (or let the "
        "pipeline create it: sink.create_table), or correct the table and the field mapping in the spec."
    )
    assert final["status_message"] == (
        f"Failed: {words} Stopped restarting: the ClickHouse table was missing {SAME_CAUSE_LIMIT} times in a row; "
        "another restart cannot help until that is changed. Deploy or resume once it is."
    )
    runs = api.get(f"{URL}{pk}/runs/").json()
    assert [(r["outcome"], r["exit_code"], r["cause"], r["reason"]) for r in runs] == [
        ("failed", 1, "clickhouse_table", words)
    ] * SAME_CAUSE_LIMIT  # stopped early: the restart limit (10) was far away
    assert "does not exist (create_table is false)" in runs[0]["log_tail"]
    assert runs[0]["driver_memory"] == "1g"  # CLEARFLOW_DRIVER_MEMORY of the worker
    detail = api.get(f"{URL}{pk}/").json()
    assert detail["status_message"] == final["status_message"] and "Traceback" not in detail["status_message"]

    browser = Client()
    browser.force_login(owner)
    page = browser.get(f"/pipelines/{pk}/").content.decode()
    assert "Stopped restarting: the ClickHouse table was missing" in page
    run_state = browser.get(f"/pipelines/{pk}/run-state/").content.decode()
    assert words in run_state and 'data-cause="clickhouse_table"' in run_state

    alert_services.alerts_evaluate()  # what the beat does every CLEARFLOW_ALERT_INTERVAL
    incident = AlertIncident.objects.get(pipeline_id=pk, kind=RuleKind.PIPELINE_FAILED, resolved_at__isnull=True)
    message = AlertNotification.objects.filter(incident=incident).first().message
    assert f"The pipeline failed: {words} Stopped restarting:" in message and "Traceback" not in message
