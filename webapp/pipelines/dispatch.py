"""The hook point between the web app and the worker.

Services call these through `transaction.on_commit`, so the worker only hears about a change once it is in the
database. Tasks are sent by name, so the web app never imports the worker's code. A lost message is not
lost work: the watcher (beat, every few seconds) acts on every pipeline's status anyway.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)


def _send(task: str, **kwargs: Any) -> None:
    from worker.celery import app  # the Celery app object only (configuration), no task code

    try:
        app.send_task(task, kwargs=kwargs, queue=settings.PIPELINE_QUEUE)
    except Exception as exc:  # the broker is down: the watcher picks the change up once it is back
        logger.warning("could not enqueue %s (%s): the watcher will act on it", task, exc)


def deploy_requested(*, pipeline_id: int, version_id: int) -> None:
    logger.info("pipeline %s: deploy of version %s requested", pipeline_id, version_id)
    _send("clearflow.pipeline_reconcile", pipeline_id=pipeline_id)


def stop_requested(*, pipeline_id: int) -> None:
    logger.info("pipeline %s: stop requested", pipeline_id)
    _send("clearflow.pipeline_reconcile", pipeline_id=pipeline_id)


def job_discard(*, job_name: str, job: dict[str, Any] | None, remove_checkpoint: bool) -> None:
    """A deleted pipeline: stop its job (if one ran) and remove its checkpoint (if asked)."""
    logger.info("%s: deleted; job %s, remove checkpoint: %s", job_name, "running" if job else "none", remove_checkpoint)
    _send("clearflow.pipeline_job_discard", job_name=job_name, job=job, remove_checkpoint=remove_checkpoint)
