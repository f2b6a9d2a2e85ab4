"""Key candidates for key advice: fields whose values look like identifiers, with their duplicates.

The first PROBE_EVENTS events have every scalar field (up to three levels deep) counted and classified; then
the identifier-like ones (uuid-like, named like an id, or nearly unique; not text with spaces, dates,
floats or booleans) are counted alone, up to CANDIDATE_EVENTS events. Each candidate reports its duplicate
share and how many of its duplicates differ from the first event with that value (a key that would merge
different events). Memory: per candidate, a dict of value hashes to the first payload's hash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from clearflow_spec.field_types import UUID_RE

PROBE_EVENTS = 1_000  # events whose every field is looked at to find key candidates
CANDIDATE_EVENTS = 100_000  # candidates are counted over at most this many events (bounded memory)
MAX_CANDIDATES = 5
MAX_PROBED_PATHS = 64

# A UUID, also written without its dashes (32 hex digits), looks like an identifier.
_HEX32_RE = re.compile(r"^[0-9a-fA-F]{32}$")
_ID_NAME_RE = re.compile(r"(^|[_\-.])(id|uuid|guid|key)$|[a-z](Id|ID|Uuid|Key)$", re.IGNORECASE)
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
MISSING = object()


@dataclass(frozen=True)
class KeyCandidate:
    field: str
    events: int  # events looked at for this field
    missing: int
    distinct: int
    duplicates: int
    duplicate_share: float
    differing: int  # duplicates whose payload is not byte-identical to the first event with that value
    uuid_like: bool


def lookup(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(value, dict):
            return MISSING
        value = value.get(part, MISSING)
        if value is MISSING:
            return MISSING
    return value


def hashable(value: Any) -> Any:
    return orjson.dumps(value) if isinstance(value, dict | list) else value


@dataclass
class _PathStats:
    seen: dict[int, int] = field(default_factory=dict)  # hash of the value -> hash of the first payload
    present: int = 0
    duplicates: int = 0
    differing: int = 0
    uuid_like: int = 0
    unfit: int = 0  # values that are not identifier-like: floats, booleans, objects, text with spaces, dates

    def classify(self, value: Any) -> None:
        """Only while probing: what the values look like."""
        if isinstance(value, str):
            if UUID_RE.match(value) or _HEX32_RE.match(value):
                self.uuid_like += 1
            elif " " in value or _DATETIME_RE.match(value) or len(value) > 200:
                self.unfit += 1
        elif isinstance(value, bool | float | dict | list):
            self.unfit += 1

    def count(self, value: Any, payload_hash: int) -> None:
        self.present += 1
        key = hash(hashable(value))
        first = self.seen.get(key)
        if first is None:
            self.seen[key] = payload_hash
        else:
            self.duplicates += 1
            self.differing += first != payload_hash


class CandidateFinder:
    """Every scalar field of the first PROBE_EVENTS objects is counted; then only the identifier-like ones,
    up to CANDIDATE_EVENTS events."""

    def __init__(self, *, exclude: set[str]) -> None:
        self.exclude = exclude
        self.paths: dict[str, _PathStats] = {}
        self.chosen: dict[tuple[str, ...], tuple[str, _PathStats]] | None = None
        self.events = 0

    def add(self, obj: dict[str, Any], raw: bytes) -> None:
        if self.events >= CANDIDATE_EVENTS:
            return
        self.events += 1
        payload_hash = hash(raw)
        if self.chosen is None:
            self._probe(obj, payload_hash, ())
            if self.events == PROBE_EVENTS:
                self._choose()
            return
        # _PathStats.count, inlined: this loop runs for every candidate of every event.
        for path, (_name, stats) in self.chosen.items():
            value = obj.get(path[0]) if len(path) == 1 else lookup(obj, path)
            if value is None or value is MISSING:
                continue
            stats.present += 1
            key = hash(orjson.dumps(value)) if isinstance(value, dict | list) else hash(value)
            first = stats.seen.get(key)
            if first is None:
                stats.seen[key] = payload_hash
            else:
                stats.duplicates += 1
                stats.differing += first != payload_hash

    def _probe(self, value: dict[str, Any], payload_hash: int, prefix: tuple[str, ...]) -> None:
        for name, child in value.items():
            path = (*prefix, name)
            if isinstance(child, dict):
                if len(path) < 3:
                    self._probe(child, payload_hash, path)
                continue
            if child is None:
                continue
            dotted = ".".join(path)
            stats = self.paths.get(dotted)
            if stats is None:
                if len(self.paths) >= MAX_PROBED_PATHS or dotted in self.exclude:
                    continue
                stats = self.paths[dotted] = _PathStats()
            stats.classify(child)
            stats.count(child, payload_hash)

    def _choose(self) -> None:
        ranked = []
        for name, stats in self.paths.items():
            if stats.present < self.events / 2 or stats.unfit:
                continue
            ratio = len(stats.seen) / stats.present
            uuid_like = stats.uuid_like >= 0.9 * stats.present
            id_named = bool(_ID_NAME_RE.search(name.rsplit(".", 1)[-1]))
            if uuid_like or (id_named and ratio >= 0.2) or ratio >= 0.9:
                ranked.append((not uuid_like, not id_named, -ratio, name))
        ranked.sort()
        self.chosen = {tuple(name.split(".")): (name, self.paths[name]) for *_rank, name in ranked[:MAX_CANDIDATES]}
        self.paths = {}

    def candidates(self) -> list[KeyCandidate]:
        if self.chosen is None:
            self._choose()
        out = []
        for name, stats in (self.chosen or {}).values():
            out.append(
                KeyCandidate(
                    field=name,
                    events=self.events,
                    missing=self.events - stats.present,
                    distinct=len(stats.seen),
                    duplicates=stats.duplicates,
                    duplicate_share=round(stats.duplicates / self.events, 4) if self.events else 0.0,
                    differing=stats.differing,
                    uuid_like=stats.uuid_like >= 0.9 * stats.present,
                )
            )
        return out
