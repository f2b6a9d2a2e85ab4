"""Whether a pipeline keeps up with its topics, judged from the worker's lag readings, and what to re-size it to.

Pure Python (no Spark, no Django), so the worker, the web app and the engine's own command judge alike:
- `judge(readings)`: the pace over the last readings (`protocol.LagReading`, read by `worker.lag` from the
  brokers): the lag, the rate events arrive at and the rate the pipeline commits them, the lag's growth, and the
  state in words: keeping up, catching up, or behind;
- `behind_cause(...)`: why a pipeline is behind, when it is known, with what to do;
- `resize_for(...)`: the rate a running pipeline should be sized for now (`clearflow_spec.sizing`), or None.

Sizing is a loop: a pipeline deployed on a quiet topic is sized as a light one (the idle CPU class, a small heap,
the first JIT tier only, a long trigger). When events then arrive faster than a light pipeline can take, or its
lag grows, it is sized again for the rate seen, and once it has been light for a while, light again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise
from typing import Any, Literal

from clearflow_spec.protocol import LagReading
from clearflow_spec.sizing import LIGHT_MAX_EVENTS_PER_SECOND

PaceState = Literal["unknown", "keeping_up", "catching_up", "behind"]

# The pace is judged over the readings of the last PACE_WINDOW_SECONDS (at one reading every 10 s, a dozen): long
# enough that a batch committing every few seconds does not read as a lag that comes and goes, short enough that a
# pipeline that falls behind says so within a couple of minutes.
PACE_WINDOW_SECONDS = 120
PACE_MIN_SPAN_SECONDS = 25  # fewer seconds than this between the first and last reading: not judged yet
# The rates (events arriving, events committed) are those of the last RATE_WINDOW_SECONDS: a load that has just
# come is seen as such, not averaged with the quiet minutes before it.
RATE_WINDOW_SECONDS = 30
# A lag of up to this many seconds of arriving events (and at least LAG_FLOOR records) is a pipeline keeping up:
# a micro-batch's worth, read at the next trigger.
KEEPING_UP_SECONDS = 30
LAG_FLOOR = 1000
# A larger lag that does not shrink by at least this share of the arriving rate (and one event a second) is behind:
# the pipeline reads no faster than events arrive, so it never catches up.
SHRINKING_SHARE = 0.02

# Re-sizing: a run is not judged in its first RESIZE_SETTLE_SECONDS of running (its first batch, the JIT's warm-up),
# and a light run is re-sized when events arrive at more than LIGHT_EXCEEDED times what a light pipeline takes, or
# when it is behind. A pipeline sized for a busy rate becomes light again only after LIGHT_AGAIN_SECONDS below
# LIGHT_AGAIN_SHARE of the light rate, keeping up: the hysteresis that keeps a rate near the edge from restarting it.
RESIZE_SETTLE_SECONDS = 60
LIGHT_EXCEEDED = 1.5
LIGHT_AGAIN_SECONDS = 30 * 60
LIGHT_AGAIN_SHARE = 0.5
# A busy run is re-sized for a larger state when the state's memory bound the rate calls for is this many times
# the one it runs with.
STATE_MEMORY_GROWTH = 1.5


@dataclass(frozen=True)
class Pace:
    """A pipeline's pace over its recent lag readings."""

    state: PaceState
    lag: int  # records behind, at the last reading
    arriving_per_second: float  # events written to its topics, per second
    reading_per_second: float  # events it committed, per second
    growing_per_second: float  # the lag's change per second (negative: shrinking)
    measured_at_ms: int | None  # the last reading's time
    seconds_judged: float  # the span of readings the pace is judged on

    @property
    def catch_up_seconds(self) -> float | None:
        """How long until the lag is read at the current pace (None: not shrinking)."""
        if self.state != "catching_up" or self.growing_per_second >= 0:
            return None
        return self.lag / -self.growing_per_second

    def summary(self) -> str:
        """The pace in words, as the page, the API and the alert say it."""
        if self.state == "unknown":
            if self.measured_at_ms is None:
                return "Lag not read yet."
            return f"Lag {count(self.lag)} events; its pace is known after {PACE_MIN_SPAN_SECONDS} s of readings."
        if self.state == "behind":
            growing = self.growing_per_second > 0
            trend = f"growing {count(self.growing_per_second)}/s" if growing else "not shrinking"
            return (
                f"Behind: lag {count(self.lag)} events, {trend} (events arrive at "
                f"{count(self.arriving_per_second)}/s, read at {count(self.reading_per_second)}/s)."
            )
        if self.state == "catching_up":
            eta = self.catch_up_seconds
            left = f", about {duration(eta)} to go" if eta is not None else ""
            return f"Catching up: lag {count(self.lag)} events, shrinking {count(-self.growing_per_second)}/s{left}."
        return f"Keeping up: lag {count(self.lag)} events."

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "catch_up_seconds": self.catch_up_seconds, "summary": self.summary()}


def unknown(latest: LagReading | None = None) -> Pace:
    return Pace(
        state="unknown",
        lag=latest.total if latest else 0,
        arriving_per_second=0.0,
        reading_per_second=0.0,
        growing_per_second=0.0,
        measured_at_ms=latest.t_ms if latest else None,
        seconds_judged=0.0,
    )


def _slope(points: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope of (seconds, value) points, per second."""
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread <= 0:
        return 0.0
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread


def judge(readings: Sequence[LagReading], *, window_seconds: float = PACE_WINDOW_SECONDS) -> Pace:
    """The pace over the readings of the last `window_seconds` (oldest first or not: they are sorted here)."""
    ordered = sorted(readings, key=lambda r: r.t_ms)
    if not ordered:
        return unknown()
    latest = ordered[-1]
    recent = [r for r in ordered if latest.t_ms - r.t_ms <= window_seconds * 1000]
    span = (latest.t_ms - recent[0].t_ms) / 1000
    if len(recent) < 2 or span < PACE_MIN_SPAN_SECONDS:
        return unknown(latest)
    first = recent[0]
    rated = [r for r in recent if latest.t_ms - r.t_ms <= RATE_WINDOW_SECONDS * 1000]
    rate_from = rated[0] if len(rated) >= 2 else recent[-2]
    rate_span = (latest.t_ms - rate_from.t_ms) / 1000
    arriving = max(0.0, (latest.end_total - rate_from.end_total) / rate_span)
    reading = max(0.0, (latest.committed_total - rate_from.committed_total) / rate_span)
    growing = _slope([((r.t_ms - first.t_ms) / 1000, float(r.total)) for r in recent])
    small = max(LAG_FLOOR, arriving * KEEPING_UP_SECONDS)
    shrinking = growing < -max(1.0, arriving * SHRINKING_SHARE)
    if latest.total <= small:
        state: PaceState = "keeping_up"
    elif shrinking:
        state = "catching_up"
    else:
        state = "behind"
    return Pace(
        state=state,
        lag=latest.total,
        arriving_per_second=round(arriving, 1),
        reading_per_second=round(reading, 1),
        growing_per_second=round(growing, 1),
        measured_at_ms=latest.t_ms,
        seconds_judged=round(span, 1),
    )


def max_arriving_per_second(readings: Sequence[LagReading]) -> float:
    """The highest rate events arrived at between two consecutive readings (0 with fewer than two)."""
    ordered = sorted(readings, key=lambda r: r.t_ms)
    best = 0.0
    for before, after in pairwise(ordered):
        seconds = (after.t_ms - before.t_ms) / 1000
        if seconds > 0:
            best = max(best, (after.end_total - before.end_total) / seconds)
    return best


@dataclass(frozen=True)
class Cause:
    """Why a pipeline is behind, and what to do, in words."""

    code: str  # light | stalled | cores | clickhouse | state_memory | unknown
    words: str


def behind_cause(
    pace: Pace,
    *,
    sizing: Mapping[str, Any],
    seconds_since_last_batch: float | None,
    batch_ms: int | None,
    insert_ms: int | None,
    load_average: float | None,
    cores: int,
    state_memory_needed_mb: int | None,
) -> Cause:
    """Why a pipeline whose `pace` is behind falls behind: the first that holds of its job sized as a light one,
    no micro-batch finishing, ClickHouse's inserts taking most of a batch, the state's memory bound too small for
    the rate, every core of the machine busy."""
    if sizing.get("light"):
        sized_for = sizing.get("events_per_second")
        return Cause(
            "light",
            f"It runs as a light pipeline (sized for {count(sized_for or 0)}/s) while events arrive at "
            f"{count(pace.arriving_per_second)}/s: it is re-sized for the rate seen.",
        )
    if seconds_since_last_batch is not None and seconds_since_last_batch > 120:
        return Cause(
            "stalled",
            f"No micro-batch has finished for {duration(seconds_since_last_batch)}: the job is stuck or one batch is "
            "very large. Its log says what it waits for.",
        )
    if batch_ms and insert_ms and insert_ms > 0.5 * batch_ms:
        return Cause(
            "clickhouse",
            f"ClickHouse is slow: an insert took {insert_ms / 1000:.1f} s of a {batch_ms / 1000:.1f} s micro-batch. "
            "Look at the server's load, merges and disk.",
        )
    bound = sizing.get("rocksdb_memory_mb")
    if state_memory_needed_mb and bound and state_memory_needed_mb > STATE_MEMORY_GROWTH * bound:
        return Cause(
            "state_memory",
            f"The state's memory is too small: {state_memory_needed_mb} MB is needed at this rate, it has "
            f"{bound} MB. It is re-sized.",
        )
    if load_average is not None and load_average >= cores:
        return Cause(
            "cores",
            f"This machine's {cores} cores are full (load {load_average:.1f}): it cannot hold this load. Give it more "
            "cores, move other work off it, or run the pipelines on a Spark cluster (SPARK_MASTER).",
        )
    return Cause("unknown", "The cause is not known: the job's log and its batches' phases may tell.")


@dataclass(frozen=True)
class Resize:
    """Size the pipeline's job again for `events_per_second` (the job restarts from its checkpoint)."""

    events_per_second: float
    reason: str


def resize_for(
    pace: Pace,
    *,
    sizing: Mapping[str, Any],
    running_seconds: float,
    first_batch_done: bool = True,
    settle_seconds: float = RESIZE_SETTLE_SECONDS,
    quiet_max_per_second: float | None = None,
    quiet_seconds: float = 0.0,
    state_memory_needed_mb: int | None = None,
) -> Resize | None:
    """The rate to size a running pipeline for now, or None to leave it as it is.

    `sizing`: what its run was sized with (`events_per_second`, `light`, `rocksdb_memory_mb`, as the worker
    records it). `quiet_max_per_second`: the highest rate events arrived at over the last `quiet_seconds` of
    readings. `state_memory_needed_mb`: the state's memory bound the arriving rate calls for. `settle_seconds`: how
    long a run runs before it is judged (RESIZE_SETTLE_SECONDS). `first_batch_done`: whether the run has ended a
    micro-batch; until then it is still starting (minutes on a busy machine), not a pace to size for, and a restart
    would only begin the start again."""
    if pace.state == "unknown" or not first_batch_done or running_seconds < settle_seconds or not sizing:
        return None
    rate = max(pace.arriving_per_second, pace.reading_per_second)
    sized_for = float(sizing.get("events_per_second") or 0.0)
    light = bool(sizing.get("light"))
    heavy = LIGHT_EXCEEDED * LIGHT_MAX_EVENTS_PER_SECOND
    if light and (pace.state == "behind" or rate > heavy):
        if pace.state == "behind":
            why = f"lag {count(pace.lag)} events and growing"
        elif pace.arriving_per_second > heavy:
            why = "more than a light pipeline takes"
        else:  # a backlog read faster than any light pipeline's rate: its batches are a busy pipeline's
            why = f"a backlog of {count(pace.lag)} events read at {count(pace.reading_per_second)}/s"
        return Resize(
            events_per_second=max(rate, heavy),
            reason=f"events arrive at {count(pace.arriving_per_second)}/s ({why}), sized for {count(sized_for)}/s",
        )
    bound = sizing.get("rocksdb_memory_mb")
    if (
        not light
        and pace.state in ("behind", "catching_up")
        and state_memory_needed_mb
        and bound
        and state_memory_needed_mb > STATE_MEMORY_GROWTH * bound
    ):
        return Resize(
            events_per_second=rate,
            reason=(
                f"events arrive at {count(pace.arriving_per_second)}/s, sized for {count(sized_for)}/s: the state "
                f"needs {state_memory_needed_mb} MB of memory, it has {bound} MB"
            ),
        )
    if (
        not light
        and sizing.get("light_eligible", True)
        and pace.state == "keeping_up"
        and quiet_max_per_second is not None
        and quiet_seconds >= LIGHT_AGAIN_SECONDS
        and running_seconds >= LIGHT_AGAIN_SECONDS
        and quiet_max_per_second < LIGHT_AGAIN_SHARE * LIGHT_MAX_EVENTS_PER_SECOND
        and sized_for > LIGHT_MAX_EVENTS_PER_SECOND
    ):
        return Resize(
            events_per_second=quiet_max_per_second,
            reason=(
                f"events arrived at {count(quiet_max_per_second)}/s at most for {duration(quiet_seconds)}, sized "
                f"for {count(sized_for)}/s: light again"
            ),
        )
    return None


def count(value: float) -> str:
    """1234 -> '1.2k', 3_700_000 -> '3.7M', 12 -> '12'."""
    value = float(value)
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.0f}" if abs(value) >= 10 or value == int(value) else f"{value:.1f}"


def duration(seconds: float) -> str:
    """95 -> '1 min 35 s', 40 -> '40 s', 7300 -> '2 h 2 min'."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


__all__ = [
    "PACE_WINDOW_SECONDS",
    "Cause",
    "Pace",
    "Resize",
    "behind_cause",
    "count",
    "duration",
    "judge",
    "max_arriving_per_second",
    "resize_for",
    "unknown",
]
