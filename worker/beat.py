"""One beat for the whole stack, whichever host it runs on: each worker host may run Celery beat, and only the one
that holds the beat lease in Redis sends the periodic tasks. The others wait; when the holder dies, its lease
expires (`CLEARFLOW_BEAT_LEASE` seconds) and the next beat to ask takes it over.

The lease is a Redis key (`protocol.BEAT_LEADER_KEY`) holding `<host id> <pid>`, set with NX and renewed by its
holder at every tick (compare-and-set, so a beat that lost it never renews another's). `settings.CELERY_BEAT_SCHEDULER`
names this scheduler, for `celery beat` and the worker's `-B` alike.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import psutil
from celery.beat import PersistentScheduler
from django.conf import settings

from clearflow_spec import protocol
from worker import jobs, redis_state

log = logging.getLogger(__name__)

# Renew the lease if it is still ours (compare-and-set), in one step.
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


def beat_holder() -> str | None:
    """Who holds the beat lease ("<host id> <pid>"), None when nobody does."""
    raw = redis_state.client().get(protocol.BEAT_LEADER_KEY)
    return raw.decode() if raw else None


class LeaderScheduler(PersistentScheduler):
    """Celery's own scheduler, sending only while this beat holds the stack's beat lease."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.identity = f"{jobs.this_host()} {os.getpid()}"
        self.lease_ms = int(settings.CLEARFLOW_BEAT_LEASE_SECONDS * 1000)
        self.leading = False
        super().__init__(*args, **kwargs)

    def _hold(self) -> bool:
        client = redis_state.client()
        try:
            if self.leading and client.eval(_RENEW, 1, protocol.BEAT_LEADER_KEY, self.identity, self.lease_ms):
                return True
            taken = bool(client.set(protocol.BEAT_LEADER_KEY, self.identity, nx=True, px=self.lease_ms))
            if not taken and self._holder_died_here(client):  # this host's beat, killed and started again
                taken = bool(client.set(protocol.BEAT_LEADER_KEY, self.identity, nx=True, px=self.lease_ms))
        except Exception as exc:  # Redis down: nobody can tell who leads; send nothing until it answers
            log.warning("beat: could not reach Redis for the beat lease: %s", exc)
            taken = False
        if taken != self.leading:
            log.info("beat: %s the beat lease (%s)", "took" if taken else "lost", self.identity)
        self.leading = taken
        return taken

    def _holder_died_here(self, client: Any) -> bool:
        """Whether the lease is held by a beat of this host whose process is gone (then it is given back now,
        rather than after the lease: `make up` started again after a crash)."""
        raw = client.get(protocol.BEAT_LEADER_KEY)
        host, _, pid = (raw.decode() if raw else "").rpartition(" ")
        if host != jobs.this_host() or not pid.isdigit() or psutil.pid_exists(int(pid)):
            return False
        return bool(client.eval(_RELEASE, 1, protocol.BEAT_LEADER_KEY, raw.decode()))

    def tick(self, *args: Any, **kwargs: Any) -> float:
        wait = self.lease_ms / 3000  # renewed well before it expires
        if not self._hold():
            return wait
        return min(super().tick(*args, **kwargs), wait)

    def close(self) -> None:
        if self.leading:
            try:
                redis_state.client().eval(_RELEASE, 1, protocol.BEAT_LEADER_KEY, self.identity)
            except Exception as exc:  # it expires on its own
                log.warning("beat: could not release the beat lease: %s", exc)
            self.leading = False
        super().close()


__all__ = ["LeaderScheduler", "beat_holder"]
