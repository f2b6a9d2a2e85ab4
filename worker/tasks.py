"""Celery tasks: thin wrappers that fetch by id and call the supervisor (which calls the services).

Policy on the decorator: the pipeline tasks go to the pipeline queue (settings.PIPELINE_QUEUE, routed by name),
are acknowledged late (a worker lost mid-task means the task runs again: `reconcile` is idempotent), and are
not retried: the watcher's next tick picks up anything left undone.
"""

from __future__ import annotations

from typing import Any

from worker.celery import app


@app.task(name="clearflow.ping")
def ping() -> str:
    return "pong"


@app.task(name="clearflow.pipeline_reconcile", acks_late=True, ignore_result=True)
def pipeline_reconcile(*, pipeline_id: int) -> None:
    """Deploy, stop or redeploy: act on the pipeline's status now (the watcher would, a few seconds later)."""
    from worker import supervisor

    supervisor.reconcile_until_settled(pipeline_id)


@app.task(name="clearflow.pipelines_watch", acks_late=True, ignore_result=True)
def pipelines_watch() -> int:
    """The watcher (beat, every few seconds): one pass over every pipeline that may need something."""
    from worker import supervisor

    return supervisor.watch()


@app.task(name="clearflow.pipeline_job_discard", acks_late=True, ignore_result=True)
def pipeline_job_discard(*, job_name: str, job: dict[str, Any] | None, remove_checkpoint: bool) -> None:
    """A deleted pipeline's job is stopped (gracefully, forced after the timeout); its checkpoint removed if asked."""
    from worker import supervisor

    supervisor.discard(job_name=job_name, job=job, remove_checkpoint=remove_checkpoint)
