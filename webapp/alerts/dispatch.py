"""Enqueue a delivery by task name (the web app never imports the worker's code), called on commit."""

from __future__ import annotations

import logging

from django.conf import settings

logger = logging.getLogger(__name__)

DELIVER_TASK = "clearflow.alert_deliver"


def deliver(*, delivery_id: int) -> None:
    from worker.celery import app  # the Celery app object only (configuration), no task code

    try:
        app.send_task(DELIVER_TASK, kwargs={"delivery_id": delivery_id}, queue=settings.ALERT_QUEUE)
    except Exception as exc:  # the broker is down: the delivery stays "pending" and is shown so on the history page
        logger.warning("could not enqueue alert delivery %s (%s)", delivery_id, exc)
