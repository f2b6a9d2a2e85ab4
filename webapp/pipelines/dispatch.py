"""The hook point between the web app and the worker.

Services call these through `transaction.on_commit`, so the worker only hears about a change once it is
in the database. Until the worker issue lands they only log: a deploy stays "deploy_requested". The worker
issue replaces the bodies with its Celery tasks (`task.delay(pipeline_id=...)`), keeping the signatures.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def deploy_requested(*, pipeline_id: int, version_id: int) -> None:
    logger.info("pipeline %s: deploy of version %s requested (no worker yet)", pipeline_id, version_id)


def stop_requested(*, pipeline_id: int) -> None:
    logger.info("pipeline %s: stop requested (no worker yet)", pipeline_id)
