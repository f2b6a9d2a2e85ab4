"""A pipeline's expected dedup state, sized before it runs (`clearflow_spec.sizing`), and whether this machine holds
it: for the API's validation (`estimated_state` and `warnings`) and the wizard's review step. What the worker
starts a job with is `worker.job_sizing` (the rule: `clearflow_spec.job_sizing`).

The rate comes, first found first: from the caller (`events_per_second`, e.g. a plan for a load to come), from
the key advice the wizard measured on the topic (its keys per second: the unique share is in it), or from the
topic's recent rate (`webapp.connections.topic_rate.recent_rate`, every event counted as unique: the most the
state can hold).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from clearflow_spec import job_sizing
from clearflow_spec.sizing import MachineCheck, StateEstimate, machine_check, parse_memory, state_estimate
from clearflow_spec.spec import DedupSpec
from webapp.connections.models import KafkaConnection
from webapp.connections.topic_rate import recent_rate

WARNING_PATH = "dedup.window"


def job_memory_limit_bytes() -> int | None:
    """What one job may take (CLEARFLOW_JOB_MEMORY_LIMIT, e.g. '4g'); None: the machine's memory."""
    limit = settings.JOB_MEMORY_LIMIT
    return parse_memory(limit) if limit else None


def estimate_for(
    *,
    dedup: DedupSpec | None,
    topics: list[str],
    kafka_connection: KafkaConnection | None = None,
    events_per_second: float | None = None,
    unique_share: float | None = None,
    advice: Mapping[str, Any] | None = None,
    ask_topic: bool = True,
) -> StateEstimate | None:
    """The expected state of `dedup` over `topics` (None without dedup, or when no rate is known; see the module's
    docstring for where the rate comes from). `advice`: the key advice kept for the spec's keys (its
    `events_per_second` and `unique_share`)."""
    if dedup is None:
        return None
    window = dedup.window_seconds
    if events_per_second is not None:
        return state_estimate(
            events_per_second=events_per_second,
            window_seconds=window,
            unique_share=1.0 if unique_share is None else unique_share,
        )
    if advice and advice.get("events_per_second") is not None:
        return state_estimate(
            events_per_second=float(advice["events_per_second"]),
            window_seconds=window,
            unique_share=float(advice.get("unique_share") or 1.0),
            rate_source="advice",
        )
    rate = recent_rate(topics=topics, kafka_connection=kafka_connection) if ask_topic else None
    if rate is None:
        return None
    return state_estimate(events_per_second=rate, window_seconds=window, rate_source="topic")


def check(estimate: StateEstimate) -> MachineCheck:
    """Whether this machine holds `estimate`: free disk at the checkpoint root, and the job memory limit."""
    return machine_check(
        estimate, checkpoint_root=settings.CLEARFLOW_CHECKPOINT_ROOT, memory_limit_bytes=job_memory_limit_bytes()
    )


def planned_trigger(events_per_second: float | None) -> str:
    """The micro-batch trigger a job gets for the expected rate (`clearflow_spec.job_sizing.planned_trigger`, with
    CLEARFLOW_TRIGGER_INTERVAL; None: not known)."""
    return job_sizing.planned_trigger(settings.SPARK_TRIGGER_INTERVAL, events_per_second)


def estimated_state_data(estimate: StateEstimate | None) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """`estimated_state` and the validation `warnings` it adds (path `dedup.window`), as the API answers them."""
    if estimate is None:
        return None, []
    result = check(estimate)
    data = {
        **estimate.to_dict(),
        "trigger_interval": planned_trigger(estimate.events_per_second),
        "fits": result.fits,
        "free_disk_bytes": result.free_disk_bytes,
        "memory_limit_bytes": result.memory_limit_bytes,
    }
    return data, [{"path": WARNING_PATH, "message": message, "fix_sql": None} for message in result.warnings]
