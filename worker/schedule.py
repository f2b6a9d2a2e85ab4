"""The beat schedule. Every periodic task expires before its next run, so a backlog never piles up."""

from __future__ import annotations

from django.conf import settings

from clearflow_spec.protocol import Task


def beat_schedule() -> dict[str, dict]:
    interval = settings.PIPELINE_WATCH_INTERVAL_SECONDS
    alerts_interval = settings.ALERT_EVALUATE_INTERVAL_SECONDS
    audit_interval = settings.AUDIT_INTERVAL_SECONDS
    lag_interval = settings.PIPELINE_LAG_INTERVAL_SECONDS
    return {
        "pipelines-watch": {
            "task": Task.PIPELINES_WATCH,
            "schedule": interval,
            "options": {"queue": settings.PIPELINE_QUEUE, "expires": interval},
        },
        "lag-read": {
            "task": Task.PIPELINES_LAG,
            "schedule": lag_interval,
            "options": {"expires": lag_interval},
        },
        "alerts-evaluate": {
            "task": Task.ALERTS_EVALUATE,
            "schedule": alerts_interval,
            "options": {"queue": settings.ALERT_QUEUE, "expires": alerts_interval},
        },
        "audits-schedule": {
            "task": Task.AUDITS_SCHEDULE,
            "schedule": audit_interval,
            "options": {"expires": audit_interval},
        },
        "activity-prune": {"task": Task.ACTIVITY_PRUNE, "schedule": 3600.0, "options": {"expires": 3600.0}},
    }
