"""Alerts end to end: the real Celery worker (with beat) evaluates the rules and sends each delivery as its own
task, to a real local webhook receiver and a real local SMTP server started by the test."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.pipeline_states import walk_to
from tests.spark_jobs.engine_helpers import wait_for
from tests.webapp.alerts.conftest import make_pipeline
from tests.webapp.audits.conftest import create_pipeline_table, insert_orders, order_key
from tests.webapp.conftest import orders_spec
from tests.worker.alert_receivers import SmtpReceiver, WebhookReceiver
from webapp.alerts import services
from webapp.alerts.models import AlertDelivery, AlertIncident
from webapp.audits.selectors import latest_result_for_pipeline
from webapp.connections.services import kafka_connection_create
from webapp.pipelines import services as pipeline_services
from webapp.pipelines.models import Pipeline, PipelineStatus

pytestmark = pytest.mark.django_db(transaction=True)
S = PipelineStatus
MAX_RETRIES = 3


@pytest.fixture
def webhooks() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()
    yield receiver
    receiver.close()


@pytest.fixture
def smtp() -> Iterator[SmtpReceiver]:
    receiver = SmtpReceiver()
    yield receiver
    receiver.close()


@pytest.fixture
def alert_worker(celery_worker, worker_env, smtp):
    worker_env.update(
        {
            "CLEARFLOW_ALERT_INTERVAL": "1",
            "CLEARFLOW_ALERT_RETRY_BACKOFF": "1",
            "CLEARFLOW_ALERT_MAX_RETRIES": str(MAX_RETRIES),
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": str(smtp.port),
        }
    )
    return celery_worker


def fail_through_the_watcher(pipeline: Pipeline) -> None:
    """Deploying with no version to run: the worker's watcher fails the pipeline ("No version to run.")."""
    walk_to(pipeline, S.DEPLOY_REQUESTED)
    wait_for(lambda: Pipeline.objects.get(pk=pipeline.pk).status == S.FAILED, timeout=60)


def test_a_failed_pipeline_alerts_once_renotifies_and_resolves(owner, alert_worker, webhooks, smtp):
    services.alert_channel_create(
        owner=owner, data={"name": "hook", "kind": "webhook", "webhook_url": webhooks.url("/hook/zq-secret")}
    )
    services.alert_channel_create(
        owner=owner,
        data={"name": "slack", "kind": "webhook", "webhook_url": webhooks.url("/slack"), "webhook_format": "slack"},
    )
    services.alert_channel_create(owner=owner, data={"name": "ops", "kind": "email", "email_to": "ops@example.com"})
    pipeline = make_pipeline(owner, name="payments")
    alert_worker.start()

    fail_through_the_watcher(pipeline)
    wait_for(lambda: webhooks.on("/hook/zq-secret") and webhooks.on("/slack") and smtp.messages, timeout=60)
    first = webhooks.on("/hook/zq-secret")[0].body
    assert first["event"] == "firing" and first["status"] == "firing"
    assert first["pipeline"] == {"id": pipeline.pk, "name": "payments"}
    assert first["rule"] == {"kind": "pipeline_failed", "title": "Pipeline failed"}
    assert "No version to run." in first["text"]
    assert webhooks.on("/slack")[0].body == {"text": first["text"]}
    _, recipients, mail = smtp.messages[0]
    assert recipients == ["ops@example.com"]
    assert mail["Subject"] == "[FIRING] payments: Pipeline failed"
    assert "No version to run." in mail.get_payload()

    time.sleep(4)  # several evaluation ticks while it stays failed: still one alert per channel
    assert (len(webhooks.on("/hook/zq-secret")), len(webhooks.on("/slack")), len(smtp.messages)) == (1, 1, 1)

    # An hour passes (the rule re-notifies every 60 minutes): the next tick sends "still firing".
    AlertIncident.objects.filter(pipeline=pipeline).update(last_notified_at=timezone.now() - timedelta(minutes=61))
    wait_for(lambda: len(webhooks.on("/hook/zq-secret")) == 2 and len(smtp.messages) == 2, timeout=30)
    assert webhooks.on("/hook/zq-secret")[1].body["event"] == "renotify"
    assert smtp.subjects()[1].startswith("[STILL FIRING since ")

    # It recovers (stopped by its owner): one "resolved" on every channel.
    walk_to(pipeline, S.STOPPED, message="Stopped.")
    wait_for(lambda: len(webhooks.on("/hook/zq-secret")) == 3 and len(smtp.messages) == 3, timeout=30)
    resolved = webhooks.on("/hook/zq-secret")[2].body
    assert (resolved["event"], resolved["status"]) == ("resolved", "resolved")
    assert resolved["incident"]["resolved_at"] is not None
    assert smtp.subjects()[2].startswith("[RESOLVED] payments: Pipeline failed (lasted ")
    wait_for(lambda: len(webhooks.on("/slack")) == 3, timeout=30)
    time.sleep(3)
    assert (len(webhooks.on("/hook/zq-secret")), len(smtp.messages)) == (3, 3)
    assert set(AlertDelivery.objects.values_list("status", flat=True)) == {"sent"}
    assert "zq-secret" not in alert_worker.log_path.read_text(errors="replace")


def test_a_webhook_answering_500_is_retried_and_does_not_hold_up_the_email(owner, alert_worker, webhooks, smtp):
    webhooks.statuses = {"/down": 500, "/gone": 404}
    services.alert_channel_create(
        owner=owner, data={"name": "down", "kind": "webhook", "webhook_url": webhooks.url("/down")}
    )
    services.alert_channel_create(
        owner=owner, data={"name": "gone", "kind": "webhook", "webhook_url": webhooks.url("/gone")}
    )
    services.alert_channel_create(owner=owner, data={"name": "ops", "kind": "email", "email_to": "ops@example.com"})
    pipeline = make_pipeline(owner, name="orders")
    alert_worker.start()

    fail_through_the_watcher(pipeline)
    wait_for(lambda: smtp.messages, timeout=60)
    down = AlertDelivery.objects.get(channel_name="down")
    wait_for(lambda: len(webhooks.on("/down")) == 1 + MAX_RETRIES, timeout=60)
    time.sleep(3)  # no attempt after the last retry
    assert len(webhooks.on("/down")) == 1 + MAX_RETRIES
    assert len(webhooks.on("/gone")) == 1  # a 404 is permanent: not retried
    # The email went out while the failing webhook was still being retried.
    assert smtp.messages[0][0] < webhooks.on("/down")[-1].at
    down.refresh_from_db()
    assert (down.status, down.attempts, down.last_error) == (
        "failed",
        1 + MAX_RETRIES,
        "The webhook answered HTTP 500.",
    )
    gone = AlertDelivery.objects.get(channel_name="gone")
    assert (gone.status, gone.attempts, gone.last_error) == ("failed", 1, "The webhook answered HTTP 404.")
    assert AlertDelivery.objects.get(channel_name="ops").status == "sent"
    # Backoff: the retries are spread out, each wait at most the capped exponential (1, 2, 4 s + jitter).
    hits = [hit.at for hit in webhooks.on("/down")]
    assert hits[-1] - hits[0] < 1 + 2 + 4 + 3


def test_duplicates_found_by_the_audit_alert_once_and_resolve_when_removed(
    owner, ch_conn, alert_worker, worker_env, webhooks, smtp, ch
):
    worker_env["CLEARFLOW_AUDIT_INTERVAL"] = "2"
    # The pipeline is marked running without a Spark job: the watcher must not tick (it would fail it).
    worker_env["CLEARFLOW_WATCH_INTERVAL"] = "3600"
    table = create_pipeline_table(ch, f"cf_alerts_{uuid.uuid4().hex[:8]}")
    insert_orders(ch, table, [1, 2, 3])
    services.alert_channel_create(
        owner=owner, data={"name": "hook", "kind": "webhook", "webhook_url": webhooks.url("/dups")}
    )
    services.alert_channel_create(owner=owner, data={"name": "ops", "kind": "email", "email_to": "ops@example.com"})
    kafka = kafka_connection_create(owner=owner, data={"name": "unused", "bootstrap_servers": "127.0.0.1:9"})
    pipeline = pipeline_services.pipeline_create(
        owner=owner,
        name="audited",
        kafka_connection=kafka,
        clickhouse_connection=ch_conn,
        spec=orders_spec("orders", table.database, create_table=True),
    )
    walk_to(pipeline, S.RUNNING)
    alert_worker.start()

    clean = wait_for(lambda: latest_result_for_pipeline(pipeline_id=pipeline.pk), timeout=90)
    assert clean.duplicate_keys == 0, alert_worker.log_tail()
    checked = clean.checked_at

    # Rows with duplicate keys, inserted straight into the pipeline's table (as a second writer would).
    insert_orders(ch, table, [2, 3, 3])
    wait_for(lambda: webhooks.on("/dups") and smtp.messages, timeout=60)
    fired = webhooks.on("/dups")[0].body
    assert (fired["event"], fired["rule"]["kind"], fired["value"]) == ("firing", "duplicates", 2)
    assert "The audit found 2 duplicate key(s) (5 rows) in the last 1 h" in fired["text"]
    assert smtp.subjects() == ["[FIRING] audited: Duplicates found by the audit"]
    result = latest_result_for_pipeline(pipeline_id=pipeline.pk)
    assert result.checked_at > checked and (result.duplicate_keys, result.duplicate_rows) == (2, 5)

    # Later audits still see them: no second alert.
    seen = result.checked_at
    wait_for(lambda: latest_result_for_pipeline(pipeline_id=pipeline.pk).checked_at > seen, timeout=30)
    time.sleep(2)
    assert (len(webhooks.on("/dups")), len(smtp.messages)) == (1, 1)

    # Removing them (a lightweight DELETE of the copies' keys): the next audit finds none, the alert resolves.
    ch.command(
        f"DELETE FROM `{table.database}`.`{table.table}` WHERE order_id IN ({{a:UUID}}, {{b:UUID}})",
        parameters={"a": order_key(2), "b": order_key(3)},
    )
    wait_for(lambda: len(webhooks.on("/dups")) == 2 and len(smtp.messages) == 2, timeout=60)
    resolved = webhooks.on("/dups")[1].body
    assert (resolved["event"], resolved["rule"]["kind"]) == ("resolved", "duplicates")
    assert smtp.subjects()[1].startswith("[RESOLVED] audited: Duplicates found by the audit (lasted ")
    assert latest_result_for_pipeline(pipeline_id=pipeline.pk).duplicate_keys == 0
    incident = AlertIncident.objects.get(pipeline=pipeline)
    assert incident.resolved_at is not None and incident.kind == "duplicates"
