"""Counts each task's outcome (success, failure, retry) for `/metrics` (`clearflow_celery_tasks_total`)."""

from __future__ import annotations

from typing import Any

from celery import signals

from webapp.monitoring.counters import count_task


def _name(sender: Any) -> str:
    return str(getattr(sender, "name", sender))


@signals.task_success.connect
def _count_success(sender: Any = None, **_: Any) -> None:
    count_task(task=_name(sender), outcome="success")


@signals.task_failure.connect
def _count_failure(sender: Any = None, **_: Any) -> None:
    count_task(task=_name(sender), outcome="failure")


@signals.task_retry.connect
def _count_retry(sender: Any = None, **_: Any) -> None:
    count_task(task=_name(sender), outcome="retry")
