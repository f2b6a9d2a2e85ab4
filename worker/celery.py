"""The Celery application. Tasks live in `worker.tasks`; the beat schedule in `worker.schedule`."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")

app = Celery("clearflow")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["worker"])

import worker.monitoring  # noqa: E402, F401 - connects the task outcome counters


@app.on_after_finalize.connect
def _schedule(sender: Celery, **_: object) -> None:
    from worker.schedule import beat_schedule

    sender.conf.beat_schedule = beat_schedule()
