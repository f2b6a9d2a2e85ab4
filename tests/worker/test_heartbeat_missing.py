"""A job's heartbeat that Redis no longer has (restarted without its keys, or down) does not make a healthy job
look stalled: the watcher counts from when it first found the heartbeat missing, not from the run's start. A Redis
restart under a job running for longer than the heartbeat timeout had it killed as "stalled"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from worker import redis_state

pytestmark = pytest.mark.fast


def test_a_missing_heartbeat_counts_from_when_it_was_first_found_missing(monkeypatch):
    beats: list[datetime | None] = [None, None, datetime(2026, 12, 2, 2, 0, tzinfo=UTC), None]
    monkeypatch.setattr(redis_state, "heartbeat_at", lambda job_name: beats.pop(0))
    monkeypatch.setattr(redis_state, "_heartbeat_missing_since", {})

    first = redis_state.heartbeat_or_missing_since("pipeline-3")
    assert abs(first - datetime.now(UTC)) < timedelta(seconds=5)
    assert redis_state.heartbeat_or_missing_since("pipeline-3") == first  # still missing: the same moment
    assert redis_state.heartbeat_or_missing_since("pipeline-3") == datetime(2026, 12, 2, 2, 0, tzinfo=UTC)
    assert redis_state.heartbeat_or_missing_since("pipeline-3") > first  # missing again: counted anew
