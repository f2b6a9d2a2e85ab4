"""The worker's side of a job's sizing: what it asks before a start (the topics' recent rates, the state the
checkpoint already holds) and the settings, handed to the pure rule (`clearflow_spec.job_sizing.job_resources`)."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from clearflow_spec import job_sizing
from clearflow_spec.job_sizing import JobResources
from clearflow_spec.spec import PipelineSpec
from webapp.connections.models import KafkaConnection
from webapp.connections.topic_rate import recent_rate, topics_now


def job_resources(
    *,
    spec: PipelineSpec,
    kafka_connection: KafkaConnection | None,
    checkpoint: str | None = None,
    events_per_second: float | None = None,
) -> JobResources:
    """What the job of `spec` starts with (`clearflow_spec.job_sizing.job_resources`): sized for its topics' recent
    rate (asked only for a dedup or a join), the state already in `checkpoint`, CLEARFLOW_DRIVER_MEMORY and
    CLEARFLOW_TRIGGER_INTERVAL. `events_per_second`: the rate the worker saw the running job take (a re-size)."""
    topic_rate = None
    if spec.dedup is not None or spec.join is not None:
        topic_rate = recent_rate(topics=topics_now(spec.source, kafka_connection), kafka_connection=kafka_connection)
    right_topic_rate = None
    if spec.join is not None:
        right_topic_rate = recent_rate(topics=spec.join.source.topics, kafka_connection=kafka_connection)
    stored = stored_state_bytes(checkpoint) if checkpoint and spec.dedup is not None else None
    return job_sizing.job_resources(
        spec=spec,
        topic_rate=topic_rate,
        right_topic_rate=right_topic_rate,
        seen_rate=events_per_second,
        stored_bytes=stored,
        driver_memory_setting=settings.SPARK_DRIVER_MEMORY,
        trigger_setting=settings.SPARK_TRIGGER_INTERVAL,
    )


def standby_driver_memory() -> str:
    """The standby jobs' driver memory (`clearflow_spec.job_sizing.standby_driver_memory`)."""
    return job_sizing.standby_driver_memory(settings.SPARK_DRIVER_MEMORY)


def stored_state_bytes(checkpoint: str) -> int | None:
    """Bytes of the dedup state a checkpoint holds now (its `state` directory: RocksDB's files and changelogs,
    older versions included); None for a URI or a checkpoint without state yet."""
    if "://" in checkpoint:
        return None
    root = Path(checkpoint) / "state"
    if not root.is_dir():
        return None
    total = 0
    for directory, _subdirs, files in os.walk(root):
        for name in files:
            try:
                total += os.stat(os.path.join(directory, name)).st_size
            except OSError:  # removed by a compaction or cleanup meanwhile
                continue
    return total
