"""What the worker starts a job with, as a pure function of the rates, the state a checkpoint already holds and
the settings (`job_resources`): the driver memory, RocksDB's memory bound, the state partitions and the micro-batch
trigger, from the rules of `clearflow_spec.sizing`. The worker asks the topics and the checkpoint
(`worker.job_sizing`); nothing here reads a file, a topic or a setting.

A sizing setting (CLEARFLOW_DRIVER_MEMORY, CLEARFLOW_TRIGGER_INTERVAL) is given as its text: `auto` leaves it to
the sizing, anything else overrides it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from clearflow_spec.sizing import (
    BYTES_PER_KEY_ON_DISK,
    DISK_HEADROOM,
    ROCKSDB_MEMORY_CONF,
    STATE_PARTITIONS_CONF,
    UNSIZED_ROCKSDB_MB,
    StateEstimate,
    driver_heap_mb,
    full_driver_memory,
    is_light,
    join_rocksdb_memory_mb,
    light_driver_memory,
    rocksdb_memory_mb,
    spark_memory,
    state_estimate,
    state_partitions,
    trigger_interval,
)
from clearflow_spec.spec import PipelineSpec

# Below this rate at the start a topic is quiet (sizing.state_partitions is not asked: see job_resources).
QUIET_EVENTS_PER_SECOND = 1.0
# RocksDB's memory bound for a job whose rate is not known (a topic not reachable at start).
UNKNOWN_RATE_ROCKSDB_MB = UNSIZED_ROCKSDB_MB


def is_auto(setting: str) -> bool:
    """Whether a sizing setting (CLEARFLOW_DRIVER_MEMORY, CLEARFLOW_TRIGGER_INTERVAL) leaves it to the sizing."""
    return setting.strip().lower() == "auto"


def planned_trigger(setting: str, events_per_second: float | None) -> str:
    """The micro-batch trigger a job gets: the CLEARFLOW_TRIGGER_INTERVAL `setting`, or with `auto` the one for
    the expected rate (`sizing.trigger_interval`; None: not known)."""
    return trigger_interval(events_per_second) if is_auto(setting) else setting


def default_driver_memory(setting: str) -> str:
    """The driver memory of a job with nothing to size it from: the CLEARFLOW_DRIVER_MEMORY `setting`, or with
    `auto` the full heap (a pipeline without dedup, or whose topic's rate could not be read, is not assumed to be
    light)."""
    return setting if not is_auto(setting) else full_driver_memory()


def standby_driver_memory(setting: str) -> str:
    """The standby jobs' driver memory: the CLEARFLOW_DRIVER_MEMORY `setting`, or with `auto` the light heap. A
    standby takes only a run sized for its heap (a JVM's heap is fixed at its start), and most deploys are light
    pipelines; a heavy one (or one sized without a rate) starts cold, and its run's record says why."""
    return setting if not is_auto(setting) else light_driver_memory()


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


def _join_bound_mb(
    spec: PipelineSpec, *, left: StateEstimate | None, left_rate: float | None, right_rate: float | None
) -> int | None:
    """RocksDB's bound for a join's three states (`sizing.join_rocksdb_memory_mb`), or None when a side's rate is
    not known. `left`: the left side's dedup estimate (None: no dedup there; `left_rate` is its topics')."""
    assert spec.join is not None
    if left is not None:
        left_rate = left.events_per_second
    if left_rate is None or right_rate is None:
        return None
    rules = spec.join.dedup
    right = (
        state_estimate(events_per_second=right_rate, window_seconds=rules.window_seconds) if rules is not None else None
    )
    dedup_keys = (left.keys if left is not None else 0) + (right.keys if right is not None else 0)
    return join_rocksdb_memory_mb(
        dedup_keys=dedup_keys, events_per_second=left_rate + right_rate, window_seconds=spec.join.window_seconds
    )


def job_resources(
    *,
    spec: PipelineSpec,
    topic_rate: float | None,
    right_topic_rate: float | None = None,
    seen_rate: float | None = None,
    stored_bytes: int | None = None,
    driver_memory_setting: str,
    trigger_setting: str,
) -> JobResources:
    """The job's driver memory, the Spark settings that bound its RocksDB memory and its micro-batch trigger.

    `topic_rate`: the source topics' recent events per second (None: not known, or not asked: a pipeline without
    dedup nor join needs none); `right_topic_rate`: the join's right topics'. `seen_rate`: the rate the worker saw
    the running job take (a re-size): sized for it or the topic's recent rate, whichever is larger.
    `stored_bytes`: the dedup state the checkpoint holds now (None: none, or not known).
    A `driver_memory_setting` of `auto` takes the sized heap, a size overrides it; RocksDB's bound is sized either
    way (a pipeline without dedup has no state: no bound). Neither is below what the state already in the
    checkpoint calls for (a restart with a full window while the topic is quiet: not a light pipeline). A
    `trigger_setting` of `auto` takes the trigger for the expected rate (`sizing.trigger_interval`), an interval
    overrides it."""
    rules = spec.dedup
    estimate = None
    if rules is not None and topic_rate is not None:
        estimate = state_estimate(
            events_per_second=topic_rate, window_seconds=rules.window_seconds, rate_source="topic"
        )
    seen_more = estimate is None or (seen_rate or 0) > estimate.events_per_second
    if seen_rate is not None and rules is not None and seen_more:
        estimate = state_estimate(events_per_second=seen_rate, window_seconds=rules.window_seconds)
    # The checkpoint keeps older versions beside the live state: its files count DISK_HEADROOM times over.
    stored = stored_bytes if rules is not None else None
    live_stored = int(stored / DISK_HEADROOM) if stored else 0
    keys = max(estimate.keys, live_stored // BYTES_PER_KEY_ON_DISK) if estimate is not None else None
    if estimate is not None and keys is not None and is_auto(driver_memory_setting):
        driver_memory = spark_memory(driver_heap_mb(events_per_second=estimate.events_per_second, keys=keys))
    else:
        driver_memory = default_driver_memory(driver_memory_setting)
    rate = estimate.events_per_second if estimate is not None else seen_rate
    trigger = planned_trigger(trigger_setting, rate)
    if rules is None and spec.join is None:
        return JobResources(driver_memory, (), trigger, events_per_second=rate)
    rocksdb_mb = estimate.rocksdb_memory_mb if estimate is not None else UNKNOWN_RATE_ROCKSDB_MB
    partitions = None
    light = False
    if spec.join is not None:  # one cache for its three states; its batches carry both sides: never light
        join_mb = _join_bound_mb(spec, left=estimate, left_rate=topic_rate, right_rate=right_topic_rate)
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
