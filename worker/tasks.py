"""Celery tasks: thin wrappers that fetch by id and call a service."""

from __future__ import annotations

from worker.celery import app


@app.task(name="clearflow.ping")
def ping() -> str:
    return "pong"
