"""Key advice: measure a topic's duplicates before the user picks a key and a window.

`analyze_duplicates(settings, topics=..., keys=...)` reads up to `max_events` recent events across the
topics' partitions (`recent_events`), within a time budget, and parses from each only the key fields, the
event-time field and (for the first events) the fields that could be keys. It holds the keys with their
first-seen time, and one delay per duplicate; never the events. It reports:

- events scanned, distinct keys, duplicates and their share, events missing the key;
- the delay between an event and its duplicates (p50, p99, p99.9, max, and a histogram), by the Kafka
  timestamp or by an event-time field;
- the smallest offered window (`clearflow_spec.spec.DEDUP_WINDOWS`) covering 99.9% of those delays, marked
  "at least" when the scanned events span less time than that window (longer delays could not be seen);
- the dedup state that window implies (`clearflow_spec.sizing`: events/s x window x unique share): its keys and its
  bytes on disk (the state is always in RocksDB, under the checkpoint);
- key candidates: identifier-like fields (uuid-like, named like an id, or nearly unique), each with its
  duplicate share and how many of its duplicates differ from the first event (a key that merges different
  events).

When the budget runs out it answers with what it read and says so (`complete` False).
"""

from __future__ import annotations

import math
import re
import time
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from clearflow_spec.connections import KafkaConnectionSpec
from clearflow_spec.sizing import StateEstimate, state_estimate
from clearflow_spec.spec import DEDUP_WINDOWS, parse_window
from webapp.connections.key_candidates import MISSING, CandidateFinder, KeyCandidate, hashable, lookup
from webapp.connections.recent_events import RecentEvents

DEFAULT_MAX_EVENTS = 50_000
MAX_EVENTS_LIMIT = 500_000
DEFAULT_TIME_BUDGET = 15.0
MAX_TIME_BUDGET = 25.0  # below gunicorn's 30 s worker timeout
COVERAGE = 0.999  # the recommended window covers this share of the observed duplicate delays
# `KeyAdvice.state_store`, deprecated and removed in ClearFlow 0.2.0: the dedup state is always in RocksDB now
# (spark_jobs.pipeline), so there is no store to advise; the field stays in the API's answer for clients of
# earlier versions until then.
STATE_STORE = "rocksdb"
# Histogram bin upper bounds (ms), aligned with the offered windows plus finer bins under a minute.
HISTOGRAM_EDGES_MS = (
    1_000,
    10_000,
    60_000,
    300_000,
    900_000,
    3_600_000,
    21_600_000,
    43_200_000,
    86_400_000,
    604_800_000,
)

_NUMBER_RE = re.compile(r"^\s*-?\d+(\.\d+)?\s*$")
_NO_TIME = -(2**63)  # a key's first-seen time when its event had none

TimeBasis = Literal["ingestion", "event"]


# -- results --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DelayPercentiles:
    p50: int
    p99: int
    p999: int
    max: int
    count: int  # duplicates whose delay is known


@dataclass(frozen=True)
class HistogramBin:
    label: str
    upper_ms: int | None  # None: the last, open bin
    count: int


@dataclass(frozen=True)
class KeyAdvice:
    topics: list[str]
    keys: list[str]
    time: TimeBasis
    event_time_field: str | None
    max_events: int
    planned: int  # events the scan set out to read (min of max_events and what the topics hold)
    scanned: int
    distinct_keys: int
    duplicates: int
    duplicate_share: float
    missing_keys: int
    missing_time: int  # events without a usable event time (event-time basis)
    not_json: int  # events that are not a JSON object
    span_ms: int | None  # newest minus oldest time among the scanned events
    delay_ms: DelayPercentiles | None
    histogram: list[HistogramBin]
    recommended_window: str | None
    window_is_lower_bound: bool
    reason: str
    estimated_state_keys: int | None  # keys the state holds once the recommended window is full
    estimated_state_bytes: int | None  # their bytes on disk
    state_store: Literal["rocksdb"]  # deprecated: always "rocksdb" (STATE_STORE)
    candidates: list[KeyCandidate]
    complete: bool  # False: the time budget ran out first; the figures cover what was read
    elapsed_ms: int
    notes: list[str] = field(default_factory=list)


def key_advice_from_dict(data: dict[str, Any]) -> KeyAdvice:
    """The figures kept as JSON (`dataclasses.asdict`, by the worker: webapp.connections.heavy_requests) again."""
    delays = data.get("delay_ms")
    return KeyAdvice(
        **{
            **data,
            "delay_ms": DelayPercentiles(**delays) if delays else None,
            "histogram": [HistogramBin(**b) for b in data.get("histogram", [])],
            "candidates": [KeyCandidate(**c) for c in data.get("candidates", [])],
        }
    )


# -- helpers --------------------------------------------------------------------------------------------


def human_duration(ms: float) -> str:
    """850 ms, 4.2 s, 3 min, 2.5 h, 1.5 d."""
    if ms < 1_000:
        return f"{ms:.0f} ms"
    seconds = ms / 1_000
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def event_time_ms(value: Any) -> int | None:
    """An event-time value (ISO 8601 text, or epoch seconds or milliseconds, as the job reads it) in ms."""
    if isinstance(value, bool) or value is None or value is MISSING:
        return None
    if isinstance(value, str):
        if _NUMBER_RE.match(value):
            value = float(value)
        else:
            try:
                parsed = datetime.fromisoformat(value.strip())
            except ValueError:
                return None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return int(parsed.timestamp() * 1000)
    if isinstance(value, int | float) and math.isfinite(value):
        return int(value if abs(value) >= 1e11 else value * 1000)
    return None


def percentile(sorted_values: Any, q: float) -> int:
    """Nearest-rank percentile of an ascending sequence (not empty)."""
    rank = max(1, math.ceil(q * len(sorted_values)))
    return int(sorted_values[rank - 1])


def histogram(sorted_delays: Any) -> list[HistogramBin]:
    """Counts per bin of HISTOGRAM_EDGES_MS, up to the last bin that holds a delay."""
    bins, below = [], 0
    lower = "0"
    for edge in HISTOGRAM_EDGES_MS:
        upto = bisect_right(sorted_delays, edge)
        label = f"{lower} to {human_duration(edge)}"
        bins.append(HistogramBin(label=label, upper_ms=edge, count=upto - below))
        below, lower = upto, human_duration(edge)
    bins.append(HistogramBin(label=f"> {lower}", upper_ms=None, count=len(sorted_delays) - below))
    while bins and bins[-1].count == 0:
        bins.pop()
    return bins


def recommend_window(*, p999_ms: int | None, span_ms: int | None) -> tuple[str | None, bool]:
    """The smallest offered window covering `p999_ms`, and whether it is only a lower bound (the scan
    spans less time than the window, or no offered window is long enough)."""
    if p999_ms is None:
        return None, False
    for window, _label in DEDUP_WINDOWS:
        seconds = parse_window(window)
        if seconds * 1000 >= p999_ms:
            return window, span_ms is None or span_ms < seconds * 1000
    return DEDUP_WINDOWS[-1][0], True


# -- counting -------------------------------------------------------------------------------------------


class DuplicateCounter:
    """Feed it records (`add(value_bytes, kafka_timestamp_ms)`); `result()` gives the figures."""

    def __init__(self, *, keys: list[str], time_basis: TimeBasis = "ingestion", event_time_field: str | None = None):
        self.keys = keys
        self.key_paths = [tuple(k.split(".")) for k in keys]
        self.top_level_key = keys[0] if len(keys) == 1 and "." not in keys[0] else None
        self.time_path = tuple(event_time_field.split(".")) if time_basis == "event" and event_time_field else None
        self.first_seen: dict[int, int] = {}  # hash of the key -> first-seen time (ms)
        self.delays = array("q")
        self.scanned = self.duplicates = self.missing_keys = self.missing_time = self.not_json = 0
        self.oldest: int | None = None
        self.newest: int | None = None
        self.finder = CandidateFinder(exclude={event_time_field} if event_time_field else set())

    def add(self, raw: bytes | None, kafka_ms: int | None) -> None:
        self.scanned += 1
        try:
            obj = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            self.not_json += 1
            self.missing_keys += bool(self.key_paths)
            return
        self.finder.add(obj, raw)
        if self.time_path is not None:
            when = event_time_ms(lookup(obj, self.time_path))
            if when is None:
                self.missing_time += 1
        else:
            when = kafka_ms
        if when is not None:
            self.oldest = when if self.oldest is None else min(self.oldest, when)
            self.newest = when if self.newest is None else max(self.newest, when)
        if not self.key_paths:
            return
        if self.top_level_key is not None:  # the common case, without the general lookup
            parts = [obj.get(self.top_level_key)]
        else:
            parts = [lookup(obj, path) for path in self.key_paths]
        if any(part is MISSING or part is None for part in parts):
            self.missing_keys += 1
            return
        key = hash(hashable(parts[0]) if len(parts) == 1 else tuple(hashable(p) for p in parts))
        first = self.first_seen.get(key)
        now = _NO_TIME if when is None else when
        if first is None:
            self.first_seen[key] = now
            return
        self.duplicates += 1
        if first == _NO_TIME or now == _NO_TIME:
            return
        if now >= first:
            self.delays.append(now - first)
        else:
            # The duplicate came first (another partition was read ahead): the earlier one is the original.
            self.delays.append(first - now)
            self.first_seen[key] = now

    def result(self, *, topics: list[str], max_events: int, planned: int, complete: bool, elapsed_ms: int):
        delays = sorted(self.delays)
        span = self.newest - self.oldest if self.oldest is not None and self.newest is not None else None
        stats = (
            DelayPercentiles(
                p50=percentile(delays, 0.5),
                p99=percentile(delays, 0.99),
                p999=percentile(delays, COVERAGE),
                max=delays[-1],
                count=len(delays),
            )
            if delays
            else None
        )
        window, lower_bound = recommend_window(p999_ms=stats.p999 if stats else None, span_ms=span)
        state = self._state(window, span)
        notes = []
        if not complete:
            notes.append(
                f"The time budget ran out after {self.scanned:,} of {planned:,} events: "
                "the figures cover what was read."
            )
        return KeyAdvice(
            topics=topics,
            keys=self.keys,
            time="event" if self.time_path is not None else "ingestion",
            event_time_field=".".join(self.time_path) if self.time_path else None,
            max_events=max_events,
            planned=planned,
            scanned=self.scanned,
            distinct_keys=len(self.first_seen),
            duplicates=self.duplicates,
            duplicate_share=round(self.duplicates / self.scanned, 4) if self.scanned else 0.0,
            missing_keys=self.missing_keys,
            missing_time=self.missing_time,
            not_json=self.not_json,
            span_ms=span,
            delay_ms=stats,
            histogram=histogram(delays),
            recommended_window=window,
            window_is_lower_bound=lower_bound,
            reason=self._reason(window, lower_bound, stats, span),
            estimated_state_keys=None if state is None else state.keys,
            estimated_state_bytes=None if state is None else state.disk_bytes,
            state_store=STATE_STORE,
            candidates=self.finder.candidates(),
            complete=complete,
            elapsed_ms=elapsed_ms,
            notes=notes,
        )

    def _state(self, window: str | None, span: int | None) -> StateEstimate | None:
        """The window's dedup state (`clearflow_spec.sizing`: the measured rate x window x unique share); None when
        the scan cannot tell a rate."""
        distinct = len(self.first_seen)
        if window is None or not distinct or span is None or span < 1_000:
            return None
        return state_estimate(
            events_per_second=self.scanned * 1000 / span,
            window_seconds=parse_window(window),
            unique_share=distinct / self.scanned,
        )

    def _reason(self, window: str | None, lower_bound: bool, stats: DelayPercentiles | None, span: int | None) -> str:
        keys = " + ".join(self.keys)
        if not self.scanned:
            return "The topics hold no events: there is nothing to measure yet."
        if not self.keys:
            return "Choose key field(s) to measure their duplicates."
        if self.missing_keys == self.scanned:
            return f"The key {keys} is missing from every one of the {self.scanned:,} events read: choose another."
        if stats is None:
            over = f" spanning {human_duration(span)}" if span else ""
            if self.duplicates:
                return f"{self.duplicates:,} duplicates, but none with a usable time: no window can be measured."
            return (
                f"No duplicates by {keys} among the {self.scanned:,} events read{over}: nothing to size a window "
                "on (duplicates, if any, come further apart)."
            )
        covered = f"99.9% of the {stats.count:,} duplicate delays seen (the longest {human_duration(stats.max)})"
        if window == DEDUP_WINDOWS[-1][0] and stats.p999 > parse_window(window) * 1000:
            return f"At least {window}, the longest window offered: it does not cover {covered}."
        if lower_bound:
            return (
                f"At least {window}: it covers {covered}, but the events read span only "
                f"{human_duration(span or 0)}, so later duplicates could not be seen. Read more events to tell."
            )
        return f"{window} covers {covered}, over {human_duration(span or 0)} of events."


def analyze_duplicates(
    settings: KafkaConnectionSpec,
    *,
    topics: list[str],
    keys: list[str],
    time_basis: TimeBasis = "ingestion",
    event_time_field: str | None = None,
    max_events: int = DEFAULT_MAX_EVENTS,
    time_budget: float = DEFAULT_TIME_BUDGET,
) -> KeyAdvice:
    """Read up to `max_events` recent events of `topics` within `time_budget` seconds and measure the
    duplicates by `keys` (see the module's docstring). Raises KafkaClientError / KafkaTopicNotFoundError."""
    started = time.monotonic()
    max_events = max(1, min(int(max_events), MAX_EVENTS_LIMIT))
    counter = DuplicateCounter(keys=list(keys), time_basis=time_basis, event_time_field=event_time_field)
    scan = RecentEvents(
        settings, topics=topics, max_events=max_events, deadline=started + min(time_budget, MAX_TIME_BUDGET)
    )
    add = counter.add
    for batch in scan.batches():
        for message in batch:
            kind, millis = message.timestamp()
            add(message.value(), millis if kind and millis >= 0 else None)
    return counter.result(
        topics=list(topics),
        max_events=max_events,
        planned=scan.planned,
        complete=scan.complete,
        elapsed_ms=int((time.monotonic() - started) * 1000),
    )
