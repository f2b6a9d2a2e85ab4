"""A pipeline's expected dedup state, sized before it runs (`clearflow_spec.sizing`), and whether this machine holds
it: for the API's validation (`estimated_state` and `warnings`), the wizard's review step, and the worker, which
gives the job its memory from it.

The rate comes, first found first: from the caller (`events_per_second`, e.g. a plan for a load to come), from
the key advice the wizard measured on the topic (its keys per second: the unique share is in it), or from the
topic's recent rate (`webapp.connections.topic_rate`, every event counted as unique: the most the state can
hold).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NamedTuple

from django.conf import settings

from clearflow_spec.sizing import (
    BYTES_PER_KEY_ON_DISK,
    DISK_HEADROOM,
    ROCKSDB_MEMORY_CONF,
    STATE_PARTITIONS_CONF,
    UNSIZED_ROCKSDB_MB,
    MachineCheck,
    StateEstimate,
    driver_heap_mb,
    full_driver_memory,
    is_light,
    join_rocksdb_memory_mb,
    light_driver_memory,
    machine_check,
    parse_memory,
    rocksdb_memory_mb,
    spark_memory,
    state_estimate,
    state_partitions,
    stored_state_bytes,
    trigger_interval,
)
from clearflow_spec.spec import DedupSpec, PipelineSpec, SourceSpec
from webapp.connections.kafka_client import source_topics
from webapp.connections.models import KafkaConnection
from webapp.connections.topic_rate import topic_rate
from webapp.core.exceptions import ApplicationError

log = logging.getLogger(__name__)

# Asking the topic for its rate is a few offset look-ups: a slow broker must not hold a page or a job's start.
TOPIC_RATE_TIMEOUT_SECONDS = 5.0
WARNING_PATH = "dedup.window"


def job_memory_limit_bytes() -> int | None:
    """What one job may take (CLEARFLOW_JOB_MEMORY_LIMIT, e.g. '4g'); None: the machine's memory."""
    limit = settings.JOB_MEMORY_LIMIT
    return parse_memory(limit) if limit else None


def topics_now(source: SourceSpec, kafka_connection: KafkaConnection | None) -> list[str]:
    """The topics a source reads now (a pattern's: those on the cluster it matches); [] when they cannot be
    asked, so the sizing goes on without their rate."""
    if source.topic_pattern is None or kafka_connection is None:
        return list(source.topics)
    try:
        return source_topics(kafka_connection.client_settings(), source, timeout=TOPIC_RATE_TIMEOUT_SECONDS)
    except ApplicationError as exc:
        log.info("topics of pattern %r unavailable: %s", source.topic_pattern, exc)
        return []


def recent_rate(*, topics: list[str], kafka_connection: KafkaConnection | None) -> float | None:
    """The topics' recent events per second, or None when it cannot be asked (no connection, unreachable)."""
    if kafka_connection is None or not topics:
        return None
    try:
        return topic_rate(
            kafka_connection.client_settings(), topics=topics, timeout=TOPIC_RATE_TIMEOUT_SECONDS
        ).events_per_second
    except ApplicationError as exc:
        log.info("topic rate unavailable for %s: %s", topics, exc)
        return None


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
    """The micro-batch trigger a job gets: CLEARFLOW_TRIGGER_INTERVAL, or with `auto` the one for the expected rate
    (`sizing.trigger_interval`; None: not known)."""
    if _auto(settings.SPARK_TRIGGER_INTERVAL):
        return trigger_interval(events_per_second)
    return settings.SPARK_TRIGGER_INTERVAL


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


# Below this rate at the start a topic is quiet (sizing.state_partitions is not asked: see job_resources).
QUIET_EVENTS_PER_SECOND = 1.0
# RocksDB's memory bound for a job whose rate is not known (a topic not reachable at start).
UNKNOWN_RATE_ROCKSDB_MB = UNSIZED_ROCKSDB_MB


def _auto(setting: str) -> bool:
    """Whether a sizing setting (CLEARFLOW_DRIVER_MEMORY, CLEARFLOW_TRIGGER_INTERVAL) leaves it to the sizing."""
    return setting.strip().lower() == "auto"


def default_driver_memory() -> str:
    """The driver memory of a job with nothing to size it from: CLEARFLOW_DRIVER_MEMORY, or with `auto` the full
    heap (a pipeline without dedup, or whose topic's rate could not be read, is not assumed to be light)."""
    return settings.SPARK_DRIVER_MEMORY if not _auto(settings.SPARK_DRIVER_MEMORY) else full_driver_memory()


def standby_driver_memory() -> str:
    """The standby jobs' driver memory: CLEARFLOW_DRIVER_MEMORY, or with `auto` the light heap. A standby takes
    only a run sized for its heap (a JVM's heap is fixed at its start), and most deploys are light pipelines; a
    heavy one (or one sized without a rate) starts cold, and its run's record says why."""
    return settings.SPARK_DRIVER_MEMORY if not _auto(settings.SPARK_DRIVER_MEMORY) else light_driver_memory()


def _join_bound_mb(
    spec: PipelineSpec, kafka_connection: KafkaConnection | None, *, left: StateEstimate | None
) -> int | None:
    """RocksDB's bound for a join's three states (`sizing.join_rocksdb_memory_mb`), or None when a side's rate is
    not known. `left`: the left side's dedup estimate (None: no dedup there, its rate is asked of its topics)."""
    assert spec.join is not None
    right_topics = spec.join.source.topics
    left_rate = (
        left.events_per_second
        if left is not None
        else recent_rate(topics=topics_now(spec.source, kafka_connection), kafka_connection=kafka_connection)
    )
    right_rate = recent_rate(topics=right_topics, kafka_connection=kafka_connection)
    if left_rate is None or right_rate is None:
        return None
    right = estimate_for(dedup=spec.join.dedup, topics=right_topics, events_per_second=right_rate)
    dedup_keys = (left.keys if left is not None else 0) + (right.keys if right is not None else 0)
    return join_rocksdb_memory_mb(
        dedup_keys=dedup_keys, events_per_second=left_rate + right_rate, window_seconds=spec.join.window_seconds
    )


class JobResources(NamedTuple):
    """What the worker starts a job with, sized for its pipeline."""

    driver_memory: str
    # "key=value": RocksDB's memory bound and, for a light pipeline, one state partition; none without dedup
    spark_conf: tuple[str, ...]
    trigger_interval: str
    # A light pipeline (sizing.is_light; not a join): its job yields the CPU once it runs (spark_jobs.cpu_priority)
    light: bool = False
    events_per_second: float | None = None  # the rate it was sized for (None: not known)
    rocksdb_memory_mb: int | None = None  # the state's memory bound (None: no state)
    # Whether a light sizing is possible at all (a dedup without a join): a busy job of such a pipeline may be sized
    # light again once it is quiet.
    light_eligible: bool = False

    def sizing_record(self) -> dict[str, Any]:
        """What the run records of its sizing (`PipelineRun.sizing`), which the worker's re-sizing reads."""
        return {
            "events_per_second": self.events_per_second,
            "light": self.light,
            "light_eligible": self.light_eligible,
            "driver_memory": self.driver_memory,
            "rocksdb_memory_mb": self.rocksdb_memory_mb,
            "trigger_interval": self.trigger_interval,
        }

    def words(self) -> str:
        """'a 1g heap, 512 MB of state memory, trigger 500 milliseconds' (light: and the idle CPU class)."""
        parts = [f"a {self.driver_memory} heap"]
        if self.rocksdb_memory_mb:
            parts.append(f"{self.rocksdb_memory_mb} MB of state memory")
        parts.append(f"trigger {self.trigger_interval}")
        if self.light:
            parts.append("the idle CPU class once it runs")
        return ", ".join(parts)


def job_resources(
    *,
    spec: PipelineSpec,
    kafka_connection: KafkaConnection | None,
    checkpoint: str | None = None,
    events_per_second: float | None = None,
) -> JobResources:
    """The job's driver memory, the Spark settings that bound its RocksDB memory and its micro-batch trigger.
    CLEARFLOW_DRIVER_MEMORY `auto` takes the sized heap, a size overrides it; RocksDB's bound is sized either way
    (a pipeline without dedup has no state: no bound). Neither is below what the state already in `checkpoint`
    calls for (a restart with a full window while the topic is quiet: not a light pipeline).
    CLEARFLOW_TRIGGER_INTERVAL `auto` takes the trigger for the expected rate (`sizing.trigger_interval`), an
    interval overrides it. `events_per_second`: the rate the worker saw the running job take (a re-size): sized for
    it or the topic's recent rate, whichever is larger."""
    topics = topics_now(spec.source, kafka_connection)
    estimate = estimate_for(dedup=spec.dedup, topics=topics, kafka_connection=kafka_connection)
    seen_more = estimate is None or (events_per_second or 0) > estimate.events_per_second
    if events_per_second is not None and spec.dedup is not None and seen_more:
        estimate = estimate_for(dedup=spec.dedup, topics=topics, events_per_second=events_per_second)
    # The checkpoint keeps older versions beside the live state: its files count DISK_HEADROOM times over.
    stored = stored_state_bytes(checkpoint) if checkpoint and spec.dedup is not None else None
    live_stored = int(stored / DISK_HEADROOM) if stored else 0
    keys = max(estimate.keys, live_stored // BYTES_PER_KEY_ON_DISK) if estimate is not None else None
    if estimate is not None and keys is not None and _auto(settings.SPARK_DRIVER_MEMORY):
        driver_memory = spark_memory(driver_heap_mb(events_per_second=estimate.events_per_second, keys=keys))
    else:
        driver_memory = default_driver_memory()
    rate = estimate.events_per_second if estimate is not None else events_per_second
    trigger = planned_trigger(rate)
    if spec.dedup is None and spec.join is None:
        return JobResources(driver_memory, (), trigger, events_per_second=rate)
    rocksdb_mb = estimate.rocksdb_memory_mb if estimate is not None else UNKNOWN_RATE_ROCKSDB_MB
    partitions = None
    light = False
    if spec.join is not None:  # one cache for its three states; its batches carry both sides: never light
        join_mb = _join_bound_mb(spec, kafka_connection, left=estimate)
        rocksdb_mb = max(rocksdb_mb, join_mb or 0)
    elif estimate is not None and keys is not None:
        light = is_light(events_per_second=estimate.events_per_second, keys=keys)
        # A checkpoint keeps the partitions it starts with: one, for a light pipeline measured as such; a topic
        # that is quiet at the start tells nothing of the rate to come, so its state gets one per core and can
        # follow a busy rate when one comes (the job is re-sized, its partitions stay).
        if estimate.events_per_second >= QUIET_EVENTS_PER_SECOND:
            partitions = state_partitions(events_per_second=estimate.events_per_second, keys=keys)
    if live_stored:
        # An older checkpoint keeps the partitions it started with: sized as if one held it all (the larger bound).
        rocksdb_mb = max(rocksdb_mb, rocksdb_memory_mb(keys=live_stored // BYTES_PER_KEY_ON_DISK, partitions=1))
    conf = [f"{ROCKSDB_MEMORY_CONF}={rocksdb_mb}"]
    if partitions is not None:  # a new checkpoint takes the partitions; an older one keeps its own
        conf.append(f"{STATE_PARTITIONS_CONF}={partitions}")
    return JobResources(
        driver_memory,
        tuple(conf),
        trigger,
        light=light,
        events_per_second=rate,
        rocksdb_memory_mb=rocksdb_mb,
        light_eligible=spec.join is None,
    )
