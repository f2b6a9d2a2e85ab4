"""The worker's Celery application: the project's one app (`webapp.core.queue.app`, which the web app sends
with) plus the tasks (`worker.tasks`), the beat schedule (`worker.schedule`) and the task outcome counters."""

from __future__ import annotations

import os

from celery import Celery

# Before the app exists: Celery sets Django up in its worker and beat (its Django fixup) only when this is in the
# environment as the app is made. A process started without it (`celery -A worker.celery worker` in the image)
# otherwise failed every task with "Apps aren't loaded yet".
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")

from webapp.core.queue import app

app.autodiscover_tasks(["worker"])

import worker.monitoring  # noqa: E402, F401 - connects the task outcome counters


@app.on_after_finalize.connect
def _schedule(sender: Celery, **_: object) -> None:
    from worker.schedule import beat_schedule

    sender.conf.beat_schedule = beat_schedule()


__all__ = ["app"]
