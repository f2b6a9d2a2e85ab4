"""Sizing a pipeline's dedup state before it runs: keys, bytes on disk, RocksDB memory, the job's memory.

Pure Python (no Spark, no Django): the web app shows it on the review step and in the API's validation, the
worker gives the job its memory from it (`clearflow_spec.job_sizing`, the rule a job starts with).

- `state_estimate(events_per_second=..., window_seconds=..., unique_share=...)`: the keys the dedup state holds
  once a window is full (rate x window x share of unique keys, capped by a known key space), their bytes on
  disk, the RocksDB memory to give the job (block cache + write buffers, bounded), the driver's JVM heap
  (`driver_memory`, as Spark spells it: the light heap for a light pipeline, else the full one) and the job's
  expected resident memory (RSS).
- `machine_check(estimate, ...)`: whether this machine can hold it (free disk at the checkpoint root, the
  memory a job may take), with the reasons in words.

The state lives in RocksDB (off-heap, on disk under the checkpoint), so the heap does not grow with the window:
what grows is the disk, and RocksDB's memory is bounded
(`spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage` with `maxMemoryUsageMB`).
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

MB = 1024 * 1024
GB = 1024 * MB

# Bytes on disk per key in the dedup state, as the checkpoint holds it. Measured with bench/soak.py
# (2026-11-27, 20,000 events/s, 1h window, 30 min): 5,418 MB of state directories for 33.7M keys, about 169
# bytes a key: each key is stored twice (its value state and its entry in the TTL index that expiry walks),
# with RocksDB's block index and bloom filters, and the checkpoint keeps the files of the last batches' versions
# until compaction and cleanup catch up. Planned with 170.
BYTES_PER_KEY_ON_DISK = 170
# The checkpoint keeps older versions of the state's files next to the newest (to recover from any of the
# last batches) and compaction rewrites files before it removes the old ones: free disk is asked for this
# many times the state.
DISK_HEADROOM = 2.0
# RocksDB's memory bound (`maxMemoryUsageMB`): one LRU cache for the job, charged with the write buffers too
# (up to ROCKSDB_WRITE_BUFFER_SHARE of it), that RocksDB splits in 64 shards. What every lookup needs cached are
# the bloom filter and index blocks of the files it may read (a new key, nine events in ten, is a miss that only
# reads filters): about ROCKSDB_METADATA_BYTES_PER_KEY a key (two entries a key, the value and its TTL index
# entry: 10 bloom bits and an index entry per 4 KB block each). When they do not fit, each lookup reads a file's
# whole filter block again (about 3.7% of a 64 MB file, 2.4 MB) and checksums it: a 5-minute window at 20,000
# events/s (6M keys) with a 128 MB bound spent ~400 us a row in RocksDB.get and fell minutes behind; with 512 MB
# its p95 stayed within 2.2 s (bench/soak.py, docs/performance-log.md "The cache must hold the filters"). So the
# bound holds
# - every file's metadata with half again to spare, in the part of the cache kept for it
#   (ROCKSDB_METADATA_SHARE: Spark's `highPriorityPoolRatio`, where index and filter blocks go first);
# - in each shard, the metadata of two of the largest files (ROCKSDB_FILE_BYTES, RocksDB's target file size):
#   a block is cached in one shard, and one larger than its shard's room is evicted as soon as it is read.
ROCKSDB_WRITE_BUFFER_SHARE = 0.5  # Spark's writeBufferCacheRatio
ROCKSDB_METADATA_SHARE = 0.4  # Spark's highPriorityPoolRatio (with the write buffers' share, below 1.0)
ROCKSDB_METADATA_BYTES_PER_KEY = 3.5
ROCKSDB_METADATA_SHARE_OF_FILE = 0.037
ROCKSDB_LIVE_BYTES_PER_KEY = 90  # the live state's own bytes a key, without the checkpoint's older files
ROCKSDB_FILE_BYTES = 64 * MB
ROCKSDB_CACHE_SHARDS = 64
ROCKSDB_METADATA_SPARE = 1.5
ROCKSDB_MIN_MB = 64
ROCKSDB_MAX_MB = 2048
# The Spark setting the bound is given to the job in (the worker's `--conf`, read back by spark_jobs.pipeline).
ROCKSDB_MEMORY_CONF = "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB"
# The driver's JVM heap: the micro-batches and Spark's own bookkeeping, not the state (off-heap in RocksDB).
# What the 20,000 events/s soak ran with (bench/soak.py, 1h window: 0 restarts, heap used up to ~720 MB).
DRIVER_HEAP_MB = 1024
# A light pipeline's heap: a few hundred events a second in batches of as many rows, and a state that stays
# small, need far less. Measured with bench/density.py (2026-11-27, 3 pipelines at 100 events/s, 1g heaps): the
# live heap (used after a full GC) was 96-98 MB once their first batches ran, while G1 had let the heap grow to
# 523-676 MB committed because it could (docs/performance-log.md, "Many pipelines on one machine"). The floor is
# Spark's, not the live set's: a driver whose JVM reports less than 450 MB of heap does not start
# (INVALID_DRIVER_MEMORY, "System memory 402653184 must be at least 471859200" with 384m). 512 MB: Spark's
# minimum with a margin, five times the live set.
LIGHT_DRIVER_HEAP_MB = 512
# A light job's JVM: the options its driver starts with besides the heap's bound, chosen by measuring one job at
# 100 events/s (bench/footprint.py; docs/performance-log.md, "A light job's footprint").
# - The serial collector: G1 (the JVM's default on 2 cores and 2 GB or more) keeps remembered sets, card tables
#   and per-region data beside the heap, and runs parallel and concurrent GC threads; a light job's live heap is
#   under 100 MB, which the serial collector handles in pauses of milliseconds, in the thread that allocates
#   (on a machine that hosts many jobs, no GC threads compete for its two cores).
# - A heap that starts small and gives back what it does not use: -Xms32m (Spark's -Xmx stays the bound, and
#   Spark's check of it), and after a collection at most 30% of the heap left free (at least 10%), so the
#   committed heap follows the live set instead of staying at its high-water mark.
# - The JIT's first tier only (C1), with a code cache to match: C2's compilations of Spark's and Kafka's code are
#   most of a light job's CPU in its first minutes (what 20 jobs starting together, or a deploy into the standby
#   beside busy jobs, compete for), and a batch of a few hundred rows gains little from C2's faster code. Measured
#   (bench/footprint.py, 2026-11-28, rows exact in every run): CPU from start to first row 15.9 s against 23.1
#   (and 17.9/14.8 against 24.8/25.6 in two earlier runs), CPU from 150 to 250 s after the first row 0.124 of a
#   core against 0.158, PSS 841 MB against 922.
# A busy pipeline keeps G1 and the JVM's defaults: its heap holds batches of up to 500,000 rows.
LIGHT_JAVA_OPTIONS: tuple[str, ...] = (
    "-XX:+UseSerialGC",
    "-Xms32m",
    "-XX:MinHeapFreeRatio=10",
    "-XX:MaxHeapFreeRatio=30",
    "-XX:TieredStopAtLevel=1",
    "-XX:ReservedCodeCacheSize=64m",
)
# Light means both: at most this rate (the rows a micro-batch holds) and this many keys in the state (RocksDB
# is off-heap, but its per-file bookkeeping and the state's maintenance grow with it). 1,000 events/s over the
# default 1h window is the edge; 100 events/s over 7 days is not light.
LIGHT_MAX_EVENTS_PER_SECOND = 1000
LIGHT_MAX_KEYS = 3_600_000
# Beyond heap and RocksDB, the job's processes hold the JVM's own memory (metaspace, code cache, thread
# stacks, Netty's direct buffers), the Python driver and the Python workers that write to ClickHouse. Measured
# with bench/soak.py (2026-11-27, 20,000 events/s): the job's processes held 2.6-2.8 GB with a 1 GB heap and a
# 512 MB RocksDB bound, so about 1.2 GB beside them.
PROCESS_OVERHEAD_MB = 1280

# The micro-batch trigger, from the rate. A micro-batch has a fixed cost whatever its size (planning, the state
# store's load and commit, the offset and commit logs, the hand-over to Python and the insert). A busy pipeline's
# batch takes longer than half a second anyway: a short trigger runs its batches back to back, so an event waits
# for one batch, not for a batch and the rest of a second (at 20,000 events/s, p95 produced -> visible 1.1-1.6 s
# against ~1.6-2.0 s with 1 s, same machine: docs/performance-log.md). A light pipeline's batch is mostly that fixed
# cost, so its trigger stretches until a batch holds about LIGHT_BATCH_EVENTS events, up to
# LIGHT_TRIGGER_MAX_SECONDS: at 100 events/s a job took 0.58 of a core with a 1 s trigger, 0.37 with 2 s and 0.20
# with 5 s (bench/footprint.py, docs/performance-log.md "A light pipeline's micro-batches"), and 20 such jobs with 1 s
# triggers saturated 2 cores. ClickHouse asks for the same: about one insert a second per table at most, in
# batches of hundreds of rows or more. The price is latency: up to the trigger more from produced to visible.
BUSY_TRIGGER = "500 milliseconds"
LIGHT_TRIGGER = "1 second"  # also the trigger of a pipeline whose rate is not known
BUSY_EVENTS_PER_SECOND = 5000
LIGHT_BATCH_EVENTS = 500
LIGHT_TRIGGER_MAX_SECONDS = 5


def trigger_interval(events_per_second: float | None) -> str:
    """The micro-batch trigger for a pipeline at `events_per_second` (None: not known, LIGHT_TRIGGER)."""
    if events_per_second is None:
        return LIGHT_TRIGGER
    if events_per_second >= BUSY_EVENTS_PER_SECOND:
        return BUSY_TRIGGER
    seconds = LIGHT_BATCH_EVENTS / events_per_second if events_per_second > 0 else LIGHT_TRIGGER_MAX_SECONDS
    seconds = min(LIGHT_TRIGGER_MAX_SECONDS, max(1, round(seconds)))
    return LIGHT_TRIGGER if seconds == 1 else f"{seconds} seconds"


# The phases of a micro-batch that do not grow with its rows (Spark's `durationMs`): asking the sources for their
# offsets, planning, writing the offset log and the commit log. A trigger shorter than their sum cannot be kept.
FIXED_PHASES = ("latestOffset", "getBatch", "queryPlanning", "walCommit", "commitOffsets")
FIXED_COST_BATCHES = 5  # judged on the median of this many batches that read events
_INTERVAL_UNITS_MS = {"millisecond": 1, "second": 1000, "minute": 60_000}


def interval_ms(text: str) -> int | None:
    """'500 milliseconds' -> 500, '1 second' -> 1000, '2 minutes' -> 120000; None for what is not such a text."""
    parts = text.strip().lower().split()
    if len(parts) != 2:
        return None
    try:
        amount = float(parts[0])
    except ValueError:
        return None
    unit = _INTERVAL_UNITS_MS.get(parts[1].removesuffix("s"))
    return int(amount * unit) if unit is not None and amount >= 0 else None


class TriggerCheck:
    """Says once, in words, when a query's trigger is shorter than its micro-batches' fixed cost (the median of
    their first FIXED_COST_BATCHES): the batches then run back to back and an event waits for at least that cost,
    whatever the trigger says."""

    def __init__(self, trigger: str) -> None:
        self.trigger = trigger
        self.trigger_ms = interval_ms(trigger)
        self._costs: list[int] = []
        self.said: str | None = None

    def add(self, phases_ms: dict[str, int]) -> str | None:
        """One batch's phases (BatchMetrics.phases_ms); the warning, the one time it is due."""
        if self.trigger_ms is None or self.said is not None or len(self._costs) >= FIXED_COST_BATCHES:
            return None
        self._costs.append(sum(int(phases_ms.get(name, 0)) for name in FIXED_PHASES))
        if len(self._costs) < FIXED_COST_BATCHES:
            return None
        cost = sorted(self._costs)[len(self._costs) // 2]
        if cost <= self.trigger_ms:
            return None
        self.said = (
            f"The trigger ({self.trigger}) is shorter than each micro-batch's fixed cost (about {cost / 1000:.1f} s to "
            "ask the topics for offsets, plan the batch and write the offset and commit logs): the batches run back to "
            f"back and an event waits at least that long. Choose a trigger of at least {math.ceil(cost / 100) / 10:g} "
            "seconds, or leave it to the sizing (CLEARFLOW_TRIGGER_INTERVAL=auto)."
        )
        return self.said


# The dedup state's partitions (`spark.sql.shuffle.partitions`; each is a RocksDB instance that every micro-batch
# loads, writes a changelog for and commits, and a task that reads its share of the shuffle). A light pipeline's
# batch of a few hundred rows gains nothing from two: one partition took about a tenth less CPU at 100 events/s
# (bench/footprint.py). Spark keeps the number a checkpoint was started with, so this applies to new pipelines
# (and to a reset checkpoint); a busy pipeline keeps one per core (the runner's default).
LIGHT_STATE_PARTITIONS = 1
BUSY_STATE_PARTITIONS = 2  # the runner's default on this kind of machine: one per core
STATE_PARTITIONS_CONF = "spark.sql.shuffle.partitions"


def state_partitions(*, events_per_second: float, keys: int) -> int | None:
    """LIGHT_STATE_PARTITIONS for a light pipeline, else None: one per core."""
    return LIGHT_STATE_PARTITIONS if is_light(events_per_second=events_per_second, keys=keys) else None


RateSource = Literal["given", "advice", "topic"]


@dataclass(frozen=True)
class StateEstimate:
    """The dedup state of one pipeline once its window is full, and the memory its job needs."""

    events_per_second: float
    window_seconds: int
    unique_share: float  # share of the events whose key is new within the window
    keys: int
    disk_bytes: int
    rocksdb_memory_mb: int
    driver_memory: str  # the JVM heap, as spark's --driver-memory takes it: "1g", "1536m"
    job_memory_bytes: int  # expected RSS of the job: heap + what RocksDB fills of its bound + the processes' own
    rate_source: RateSource = "given"
    capped_by_key_space: bool = False

    @property
    def rocksdb_memory_bytes(self) -> int:
        return self.rocksdb_memory_mb * MB

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rocksdb_memory_bytes": self.rocksdb_memory_bytes}


@dataclass(frozen=True)
class MachineCheck:
    """Whether a machine can hold an estimate; `warnings` say why not, in words."""

    fits: bool
    free_disk_bytes: int | None  # None: not known here (a remote checkpoint root)
    memory_limit_bytes: int | None
    warnings: list[str] = field(default_factory=list)


def spark_memory(mb: int) -> str:
    """MB as Spark's --driver-memory takes it: '1g', '512m'."""
    return f"{mb // 1024}g" if mb % 1024 == 0 else f"{mb}m"


def is_light(*, events_per_second: float, keys: int) -> bool:
    """A light pipeline: both its rate and its state's keys within the light bounds."""
    return events_per_second <= LIGHT_MAX_EVENTS_PER_SECOND and keys <= LIGHT_MAX_KEYS


def driver_heap_mb(*, events_per_second: float, keys: int) -> int:
    """The driver's heap for a pipeline at `events_per_second` whose state holds `keys`: the light heap for a
    light pipeline, else the full one."""
    return LIGHT_DRIVER_HEAP_MB if is_light(events_per_second=events_per_second, keys=keys) else DRIVER_HEAP_MB


def full_driver_memory() -> str:
    """The heap of a job with nothing to size it from (a rate that could not be read: not assumed light)."""
    return spark_memory(DRIVER_HEAP_MB)


def light_driver_memory() -> str:
    """The heap of a light pipeline's job, as Spark's --driver-memory takes it (the standby jobs' too)."""
    return spark_memory(LIGHT_DRIVER_HEAP_MB)


def driver_java_options(driver_memory: str) -> str:
    """The extra JVM options of a job's driver with `driver_memory` (as Spark spells it): the light ones for the
    light heap or less, none for a larger heap (a busy pipeline keeps the JVM's defaults). They follow the heap,
    not the pipeline, so a standby job started with the light heap has them too and a run it may take (the same
    heap: spark_jobs.standby) gets what a cold start would have given it."""
    try:
        light = parse_memory(driver_memory) <= LIGHT_DRIVER_HEAP_MB * MB
    except ValueError:  # not a size Spark would take either: nothing to add
        return ""
    return " ".join(LIGHT_JAVA_OPTIONS) if light else ""


def rocksdb_memory_mb(*, keys: int, partitions: int) -> int:
    """RocksDB's memory bound for a state of `keys` in `partitions` RocksDB instances, in MB (a multiple of 64,
    within the bounds): room for the files' index and filter blocks, in the whole cache and in each shard."""
    metadata = keys * ROCKSDB_METADATA_BYTES_PER_KEY * ROCKSDB_METADATA_SPARE
    largest_file = min(ROCKSDB_FILE_BYTES, keys / max(1, partitions) * ROCKSDB_LIVE_BYTES_PER_KEY)
    per_shard = 2 * largest_file * ROCKSDB_METADATA_SHARE_OF_FILE
    wanted = max(metadata, per_shard * ROCKSDB_CACHE_SHARDS) / ROCKSDB_METADATA_SHARE / MB
    rounded = math.ceil(wanted / 64) * 64
    return max(ROCKSDB_MIN_MB, min(ROCKSDB_MAX_MB, rounded))


# A join's state holds each side's events of a key for the join's window (one value a key and side) and a timer
# a key (two entries: by key and by time): about three entries an event held, where a dedup key has two. Its index
# and filter blocks are sized as that many dedup keys.
JOIN_KEYS_PER_EVENT = 1.5


def join_state_keys(*, events_per_second: float, window_seconds: int) -> int:
    """A join's state, in dedup keys' worth of RocksDB entries, at `events_per_second` (both sides together) over
    its `window_seconds`."""
    return round(max(0.0, events_per_second) * window_seconds * JOIN_KEYS_PER_EVENT)


def join_rocksdb_memory_mb(*, dedup_keys: int, events_per_second: float, window_seconds: int) -> int:
    """RocksDB's bound for a join's job: one cache for its three states, both sides' `dedup_keys` and the join's
    state at `events_per_second` (both sides) over its `window_seconds`; a join's batches carry both sides, so
    never a light pipeline's single partition."""
    joined = join_state_keys(events_per_second=events_per_second, window_seconds=window_seconds)
    return rocksdb_memory_mb(keys=dedup_keys + joined, partitions=BUSY_STATE_PARTITIONS)


def rocksdb_resident_mb(*, keys: int, bound_mb: int) -> int:
    """What of RocksDB's bound a state of `keys` fills: the cache holds no more than the state's own bytes, and
    the write buffers their share (a light state stays far below its bound)."""
    state_mb = keys * ROCKSDB_LIVE_BYTES_PER_KEY / MB
    return min(bound_mb, math.ceil(state_mb + bound_mb * ROCKSDB_WRITE_BUFFER_SHARE))


# The bound of a job nothing sized (a rate that could not be read, a job started without the worker's `--conf`):
# a bound, not a reservation (the cache fills only with what the state reads), so room for a busy state's largest
# files in each of the cache's shards.
UNSIZED_ROCKSDB_MB = rocksdb_memory_mb(
    keys=math.ceil(ROCKSDB_FILE_BYTES / ROCKSDB_LIVE_BYTES_PER_KEY) * BUSY_STATE_PARTITIONS,
    partitions=BUSY_STATE_PARTITIONS,
)


def state_estimate(
    *,
    events_per_second: float,
    window_seconds: int,
    unique_share: float = 1.0,
    key_space: int | None = None,
    rate_source: RateSource = "given",
) -> StateEstimate:
    """The state a window of `window_seconds` holds at `events_per_second`, of which `unique_share` have a key
    not seen within the window (1.0, the most, when unknown). `key_space`: how many keys there can be at all
    (a key with few distinct values), when known; the state never holds more."""
    if events_per_second < 0 or window_seconds <= 0:
        raise ValueError("events_per_second must be >= 0 and window_seconds > 0")
    share = min(1.0, max(0.0, unique_share))
    keys = round(events_per_second * window_seconds * share)
    capped = key_space is not None and keys > key_space
    if capped:
        keys = int(key_space or 0)
    disk = keys * BYTES_PER_KEY_ON_DISK
    partitions = state_partitions(events_per_second=events_per_second, keys=keys) or BUSY_STATE_PARTITIONS
    rocksdb_mb = rocksdb_memory_mb(keys=keys, partitions=partitions)
    resident_mb = rocksdb_resident_mb(keys=keys, bound_mb=rocksdb_mb)
    heap_mb = driver_heap_mb(events_per_second=events_per_second, keys=keys)
    return StateEstimate(
        events_per_second=round(float(events_per_second), 1),
        window_seconds=int(window_seconds),
        unique_share=round(share, 4),
        keys=keys,
        disk_bytes=disk,
        rocksdb_memory_mb=rocksdb_mb,
        driver_memory=spark_memory(heap_mb),
        job_memory_bytes=(heap_mb + resident_mb + PROCESS_OVERHEAD_MB) * MB,
        rate_source=rate_source,
        capped_by_key_space=capped,
    )


def parse_memory(value: str) -> int:
    """'512m', '2g', '1.5g', '4096' (MB) -> bytes. Raises ValueError with a readable message."""
    text = value.strip().lower().removesuffix("b")
    units = {"k": 1024, "m": MB, "g": GB, "t": 1024 * GB}
    unit = units.get(text[-1:])
    number = text[:-1] if unit else text
    try:
        amount = float(number)
    except ValueError:
        raise ValueError(f"invalid memory size {value!r}: use a number and a unit m or g, e.g. '2g'") from None
    if not math.isfinite(amount) or amount <= 0:
        raise ValueError(f"invalid memory size {value!r}: must be greater than zero")
    return int(amount * (unit or MB))


def total_memory_bytes() -> int | None:
    """This machine's physical memory (None when the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


# Standby jobs (worker.standby) wait with their JVM and Spark session up, each about 0.7-1.0 GB resident (measured
# 2026-12-01: 1.05 GB with a 1g heap). A pool of them serves deploys made one after the other, each in a JVM that
# is already up, while the pool refills. One standby per STANDBY_MEMORY_PER_JOB of the host's memory (4 on a 24 GiB
# machine, which reports 23.5), at least 1 and at most STANDBY_POOL_MAX: the rest of the memory is for pipelines.
# Four cover five deploys made one after the other right after `make up`: the pool refills one standby in about
# 15-20 s while the first four deploys take theirs (with two, the third deploy started cold: 21-28 s to a row).
STANDBY_MEMORY_PER_JOB = 5 * GB
STANDBY_POOL_MAX = 4


def standby_pool_size(memory_bytes: int | None) -> int:
    """How many standby jobs a host with `memory_bytes` of memory keeps ready (1 when it does not say)."""
    if not memory_bytes:
        return 1
    return max(1, min(STANDBY_POOL_MAX, memory_bytes // STANDBY_MEMORY_PER_JOB))


def free_disk_bytes(path: str) -> int | None:
    """Free bytes on the filesystem that holds `path` (or would: its nearest existing parent); None for a
    URI (hdfs://, s3a://), whose space is not known from here."""
    if "://" in path:
        return None
    current = Path(path).expanduser().absolute()
    while not current.exists() and current != current.parent:
        current = current.parent
    try:
        return shutil.disk_usage(current).free
    except OSError:
        return None


def human_bytes(count: float) -> str:
    """1.2 GB, 340 MB, 12 KB (powers of 1024, as the state's figures are planned)."""
    for unit, size in (("TB", 1024 * GB), ("GB", GB), ("MB", MB), ("KB", 1024)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{int(count)} bytes"


def machine_check(
    estimate: StateEstimate,
    *,
    checkpoint_root: str,
    memory_limit_bytes: int | None = None,
    free_disk: int | None = None,
) -> MachineCheck:
    """Whether the job of `estimate` fits: free disk at `checkpoint_root` (or `free_disk`, when known) for the
    state with its headroom, and its expected RSS within `memory_limit_bytes` (default: this machine's memory)."""
    disk = free_disk if free_disk is not None else free_disk_bytes(checkpoint_root)
    limit = memory_limit_bytes if memory_limit_bytes is not None else total_memory_bytes()
    warnings = []
    needed_disk = int(estimate.disk_bytes * DISK_HEADROOM)
    if disk is not None and needed_disk > disk:
        warnings.append(
            f"The dedup state needs about {human_bytes(estimate.disk_bytes)} on disk ({estimate.keys:,} keys), "
            f"{human_bytes(needed_disk)} with the checkpoint's older versions, but only {human_bytes(disk)} is "
            f"free at {checkpoint_root}: the job would stop when the disk fills. Choose a shorter window, or "
            "free space (or move CLEARFLOW_CHECKPOINT_ROOT to a larger disk)."
        )
    if limit is not None and estimate.job_memory_bytes > limit:
        warnings.append(
            f"The job needs about {human_bytes(estimate.job_memory_bytes)} of memory (a {estimate.driver_memory} "
            f"heap, RocksDB bounded at {estimate.rocksdb_memory_mb} MB), more than the {human_bytes(limit)} a job may "
            "take here: it would be killed for lack of memory. Raise the job memory limit, or run it on a larger "
            "machine."
        )
    return MachineCheck(fits=not warnings, free_disk_bytes=disk, memory_limit_bytes=limit, warnings=warnings)


__all__ = [
    "BUSY_TRIGGER",
    "BYTES_PER_KEY_ON_DISK",
    "LIGHT_BATCH_EVENTS",
    "LIGHT_STATE_PARTITIONS",
    "LIGHT_TRIGGER",
    "LIGHT_TRIGGER_MAX_SECONDS",
    "ROCKSDB_MEMORY_CONF",
    "STATE_PARTITIONS_CONF",
    "UNSIZED_ROCKSDB_MB",
    "MachineCheck",
    "StateEstimate",
    "TriggerCheck",
    "driver_heap_mb",
    "driver_java_options",
    "free_disk_bytes",
    "full_driver_memory",
    "human_bytes",
    "interval_ms",
    "is_light",
    "join_rocksdb_memory_mb",
    "join_state_keys",
    "light_driver_memory",
    "machine_check",
    "parse_memory",
    "rocksdb_memory_mb",
    "spark_memory",
    "state_estimate",
    "state_partitions",
    "total_memory_bytes",
    "trigger_interval",
]
