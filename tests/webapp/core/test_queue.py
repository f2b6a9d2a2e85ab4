"""What the web app sends the worker survives the broker's restart: a Redis that went away and came back takes the
next task, without restarting the web app."""

from __future__ import annotations

from pathlib import Path

import redis

from clearflow_spec.protocol import Task
from localstack import processes, service_defs
from tests.conftest import _drop_connections
from webapp.core import queue


def test_after_redis_restarts_the_web_app_sends_the_next_task(celery_app, tmp_path: Path):
    port = processes.free_port()
    url = f"redis://127.0.0.1:{port}/0"
    name = "queue-test-sends"
    with processes.ProcessGroup(tmp_path / "logs") as group:
        group.start(service_defs.redis(port=port, data_dir=tmp_path / "redis"))
        celery_app.conf.broker_url = celery_app.conf.result_backend = url
        _drop_connections(celery_app)
        assert queue.send(Task.PIPELINE_RECONCILE, queue=name, pipeline_id=1)

        group.stop_all()
        assert not queue.send(Task.PIPELINE_RECONCILE, queue=name, pipeline_id=2)  # down: said, not raised

        group.start(service_defs.redis(port=port, data_dir=tmp_path / "redis"))
        assert queue.send(Task.PIPELINE_RECONCILE, queue=name, pipeline_id=3)
        assert redis.Redis.from_url(url).llen(name) == 1  # the one sent since it came back (it keeps no data)

    # Nothing waits for a task's result, and the worker's tasks keep none: a send that subscribed to its result
    # channel would hold that subscription for the life of the web process, one more per send.
    pubsub = getattr(celery_app.backend.result_consumer, "_pubsub", None)
    assert pubsub is None or not pubsub.channels
