"""Sending work to the worker: Celery tasks by name (`clearflow_spec.protocol.Task`), never by importing its code.

`app` is the project's one Celery application (configured from Django's settings, `CELERY_*`); the worker adds
its tasks, beat schedule and signals to it (`worker.celery`). Creating it opens no connection. Services call the
functions below through `transaction.on_commit`, so the worker only hears about a change once it is in the
database.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from django.conf import settings

from clearflow_spec.protocol import Task

logger = logging.getLogger(__name__)

app = Celery("clearflow")
app.config_from_object("django.conf:settings", namespace="CELERY")


def send(task: Task, *, queue: str | None = None, **kwargs: Any) -> bool:
    """Enqueue `task` with keyword arguments; whether the broker took it. A broker that is down is logged, not
    raised: each caller says what picks the work up later (the watcher, the delivery history)."""
    try:
        # ignore_result: nothing here reads a task's result; without it each send subscribes this process to the
        # task's result channel, which the worker never publishes (its tasks ignore results), so they pile up.
        app.send_task(str(task), kwargs=kwargs, queue=queue, ignore_result=True)
    except Exception as exc:
        logger.warning("could not enqueue %s (%s)", task, exc)
        return False
    return True


def pipeline_reconcile(*, pipeline_id: int) -> None:
    """Act on the pipeline's status now (deploy, stop, redeploy). A lost message is not lost work: the watcher
    (beat, every few seconds) reconciles every pipeline anyway."""
    send(Task.PIPELINE_RECONCILE, queue=settings.PIPELINE_QUEUE, pipeline_id=pipeline_id)


def pipeline_job_discard(*, job_name: str, job: dict[str, Any] | None, remove_checkpoint: bool) -> None:
    """A deleted pipeline: stop its job (`job`: where its process runs, None if none ran) and remove its
    checkpoint if asked."""
    send(
        Task.PIPELINE_JOB_DISCARD,
        queue=settings.PIPELINE_QUEUE,
        job_name=job_name,
        job=job,
        remove_checkpoint=remove_checkpoint,
    )


def pipeline_column_fill(
    *, pipeline_id: int, version: int, path: str, column: str, since: str | None, start: dict[str, Any] | None
) -> None:
    """Fill the column added for `path` on the rows written before it, once `version` runs (or at once when the
    pipeline is not deployed). Not sent, the card says so and nothing is filled."""
    send(
        Task.PIPELINE_COLUMN_FILL,
        queue=settings.PIPELINE_QUEUE,
        pipeline_id=pipeline_id,
        version=version,
        path=path,
        column=column,
        since=since,
        start=start,
    )


def alert_deliver(*, delivery_id: int) -> None:
    """Send one alert notification. Not sent, the delivery stays "pending" and the history page says so."""
    send(Task.ALERT_DELIVER, queue=settings.ALERT_QUEUE, delivery_id=delivery_id)


def heavy_request_run(*, request_id: str) -> bool:
    """Read the events of a key advice or sample request (webapp.connections.heavy_requests); whether the broker
    took it (not taken, the request is failed at once so that the page does not wait for nothing)."""
    return send(Task.HEAVY_REQUEST_RUN, request_id=request_id)


def audit_pipeline(*, pipeline_id: int) -> None:
    """A pipeline's query has started (its table exists): audit the table now if it is due, not only at the next
    round. Not sent, the periodic round audits it later."""
    send(Task.AUDIT_PIPELINE, pipeline_id=pipeline_id)
