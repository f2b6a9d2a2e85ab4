"""Celery tasks: thin wrappers that fetch by id and call the reconciler (which calls the services).

Policy on the decorator: the pipeline tasks go to the pipeline queue (settings.PIPELINE_QUEUE, routed by name),
are acknowledged late (a worker lost mid-task means the task runs again: `reconcile` is idempotent), and are
not retried: the watcher's next tick picks up anything left undone.

The duplicate audit's tasks go to the default queue: `audits_schedule` (beat) fans out one
`audit_table_check` per audited table; a check is retried only on transient ClickHouse errors (network,
overload), with backoff; its last attempt stores the error as the table's result instead. `audit_pipeline`
(sent by the supervisor when a pipeline's query starts) checks its table at once, before the next round.

The alerts' tasks go to settings.ALERT_QUEUE: `alerts_evaluate` (beat) fires, re-notifies and resolves; each
delivery is its own `alert_deliver`, retried with backoff on transient errors only (its decorator says so).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from clearflow_spec.protocol import Task
from webapp.alerts.errors import RetryableDeliveryError
from worker.celery import app


@app.task(name=Task.PING)
def ping() -> str:
    return "pong"


@app.task(name=Task.PIPELINE_RECONCILE, acks_late=True, ignore_result=True)
def pipeline_reconcile(*, pipeline_id: int) -> None:
    """Deploy, stop or redeploy: act on the pipeline's status now (the watcher would, a few seconds later)."""
    from worker import reconciler

    reconciler.reconcile_until_settled(pipeline_id)


@app.task(name=Task.PIPELINES_WATCH, acks_late=True, ignore_result=True)
def pipelines_watch() -> int:
    """The watcher (beat, every few seconds): one pass over every pipeline that may need something."""
    from worker import reconciler

    return reconciler.watch()


@app.task(name=Task.PIPELINES_LAG, ignore_result=True)
def lag_read() -> int:
    """Every deployed pipeline's lag from the brokers, its pace, and a re-size where the pace calls for one (beat,
    every PIPELINE_LAG_INTERVAL_SECONDS, expiring before the next tick; on the default queue, so a slow broker
    does not hold the watcher)."""
    from worker import lag

    return lag.read_all()


@app.task(name=Task.PIPELINE_JOB_DISCARD, acks_late=True, ignore_result=True)
def pipeline_job_discard(*, job_name: str, job: dict[str, Any] | None, remove_checkpoint: bool) -> None:
    """A deleted pipeline's job is stopped (gracefully, forced after the timeout); its checkpoint removed if asked."""
    from worker import reconciler

    reconciler.discard(job_name=job_name, job=job, remove_checkpoint=remove_checkpoint)


COLUMN_FILL_WAIT_SECONDS = 5
COLUMN_FILL_MAX_WAITS = 240  # 20 minutes for the new version to start before the fill gives up, in words


@app.task(name=Task.PIPELINE_COLUMN_FILL, bind=True, acks_late=True, ignore_result=True, max_retries=None)
def pipeline_column_fill(
    self: Any, *, pipeline_id: int, version: int, path: str, column: str, since: str | None, start: dict | None
) -> None:
    """Fill a column added for a new field on the rows written before it, once no older version's job writes."""
    from webapp.core.exceptions import ApplicationError
    from webapp.pipelines import column_fill
    from webapp.pipelines.models import Pipeline

    pipeline = Pipeline.objects.select_related("deployed_version", "current_version").filter(pk=pipeline_id).first()
    if pipeline is None:
        return
    if not column_fill.fill_ready(pipeline, version):
        if self.request.retries >= COLUMN_FILL_MAX_WAITS:
            column_fill.pipeline_column_fill_record(
                pipeline=pipeline,
                report=None,
                error=f"Column `{column}` was not filled: version {version} did not start within 20 minutes.",
            )
            return
        raise self.retry(countdown=COLUMN_FILL_WAIT_SECONDS)
    try:
        report = column_fill.pipeline_column_fill(pipeline=pipeline, path=path, column=column, since=since, start=start)
    except ApplicationError as exc:
        column_fill.pipeline_column_fill_record(
            pipeline=pipeline, report=None, error=f"Column `{column}` was not filled: {exc.message}"
        )
        return
    column_fill.pipeline_column_fill_record(pipeline=pipeline, report=report)


@app.task(name=Task.ALERTS_EVALUATE, acks_late=True, ignore_result=True)
def alerts_evaluate() -> int:
    """Every alert rule (beat, every ALERT_EVALUATE_INTERVAL_SECONDS, expiring before the next tick): fire,
    re-notify, resolve. Compare-and-set state changes make an overlapping second run harmless."""
    from webapp.alerts.services import alerts_evaluate as evaluate

    return evaluate().rules


@app.task(
    name=Task.ALERT_DELIVER,
    bind=True,
    acks_late=True,
    ignore_result=True,
    # Retry only what a retry can fix (timeouts, connection errors, HTTP 5xx/429, SMTP 4xx), with exponential
    # backoff and jitter; a permanent error (other 4xx) is recorded on the delivery by the service, not raised.
    autoretry_for=(RetryableDeliveryError,),
    retry_backoff=settings.ALERT_RETRY_BACKOFF_SECONDS,
    retry_backoff_max=settings.ALERT_RETRY_BACKOFF_MAX_SECONDS,
    retry_jitter=True,
    max_retries=settings.ALERT_DELIVERY_MAX_RETRIES,
)
def alert_deliver(self, *, delivery_id: int) -> None:
    """One notification on one channel (one task each, so a failing channel never blocks another)."""
    from webapp.alerts.services import alert_delivery_send

    alert_delivery_send(delivery_id=delivery_id, final_attempt=self.request.retries >= self.max_retries)


@app.task(name=Task.HEAVY_REQUEST_RUN, acks_late=True, ignore_result=True)
def heavy_request_run(*, request_id: str) -> None:
    """Key advice or a sample: read the events and keep the answer for the page or the API client that polls."""
    from webapp.connections.heavy_requests import heavy_request_run as run

    run(request_id=request_id)


AUDIT_MAX_RETRIES = 3


@app.task(name=Task.ACTIVITY_PRUNE, acks_late=True, ignore_result=True)
def activity_prune() -> int:
    """Beat, hourly: drop activity entries older than CLEARFLOW_ACTIVITY_DAYS."""
    from webapp.activity.services import activity_prune as prune

    return prune()


@app.task(name=Task.AUDITS_SCHEDULE, acks_late=True, ignore_result=True)
def audits_schedule() -> int:
    """Beat: keep running pipelines' audited tables in step, prune old results, one check per table."""
    from django.conf import settings

    from webapp.audits import selectors, services

    services.audited_tables_sync_pipelines()
    services.audit_results_prune()
    ids = selectors.audited_table_ids_due()
    for audited_table_id in ids:
        # A check still queued when the next round starts is dropped: the new round has its own.
        audit_table_check.apply_async(
            kwargs={"audited_table_id": audited_table_id}, expires=settings.AUDIT_INTERVAL_SECONDS
        )
    return len(ids)


@app.task(name=Task.AUDIT_PIPELINE, acks_late=True, ignore_result=True)
def audit_pipeline(*, pipeline_id: int) -> None:
    """A pipeline's query has started: give it its audited table and check it now when the table has no result
    since its last change (a first deploy, or new keys), instead of at the next round."""
    from django.conf import settings

    from webapp.audits import selectors, services
    from webapp.pipelines.models import Pipeline

    pipeline = (
        Pipeline.objects.select_related("clickhouse_connection", "deployed_version", "current_version")
        .filter(pk=pipeline_id)
        .first()
    )
    if pipeline is None:  # deleted since
        return
    audited_table = services.audited_table_sync_pipeline(pipeline=pipeline)
    if audited_table is not None and selectors.audit_due_at_start(audited_table=audited_table):
        audit_table_check.apply_async(
            kwargs={"audited_table_id": audited_table.pk}, expires=settings.AUDIT_INTERVAL_SECONDS
        )


@app.task(name=Task.AUDIT_TABLE_CHECK, bind=True, acks_late=True, ignore_result=True)
def audit_table_check(self: Any, *, audited_table_id: int) -> None:
    """Count the duplicate keys of one audited table (each window) and store the results."""
    from django.conf import settings

    from webapp.audits import selectors, services
    from webapp.connections.clickhouse_client import ClickHouseClientError

    audited_table = selectors.audited_table_for_check(pk=audited_table_id)
    if audited_table is None:  # removed since the round was scheduled
        return
    last_attempt = self.request.retries >= AUDIT_MAX_RETRIES
    try:
        services.audit_check(audited_table=audited_table, record_transient=last_attempt)
    except ClickHouseClientError as exc:  # only transient ones reach here (record_transient=False)
        countdown = min(60.0, settings.AUDIT_RETRY_DELAY_SECONDS * 2**self.request.retries)
        raise self.retry(exc=exc, countdown=countdown, max_retries=AUDIT_MAX_RETRIES) from exc
