"""The beat schedule. Every periodic task expires before its next run, so a backlog never piles up."""

from __future__ import annotations

from django.conf import settings


def beat_schedule() -> dict[str, dict]:
    interval = settings.PIPELINE_WATCH_INTERVAL_SECONDS
    alerts_interval = settings.ALERT_EVALUATE_INTERVAL_SECONDS
    audit_interval = settings.AUDIT_INTERVAL_SECONDS
    return {
        "pipelines-watch": {
            "task": "clearflow.pipelines_watch",
            "schedule": interval,
            "options": {"queue": settings.PIPELINE_QUEUE, "expires": interval},
        },
        "alerts-evaluate": {
            "task": "clearflow.alerts_evaluate",
            "schedule": alerts_interval,
            "options": {"queue": settings.ALERT_QUEUE, "expires": alerts_interval},
        },
        "audits-schedule": {
            "task": "clearflow.audits_schedule",
            "schedule": audit_interval,
            "options": {"expires": audit_interval},
        },
    }
