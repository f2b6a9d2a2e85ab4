"""A job's lease in Redis: how a worker on any host watches a job that a worker on another host started.

A job's pid means something only on its own host, so the worker there watches it through `/proc` and signals.
Every other worker of the stack watches it through its lease, a Redis hash its supervisor (`worker.jobwrap`)
holds for the whole run:

- the supervisor writes the lease before it reports its pid and renews it every TERM/RENEWALS_PER_TERM seconds;
  the hash expires TERM seconds after the last renewal;
- when it cannot renew for half the term (Redis or the network gone), it stops its own job (SIGTERM, the
  micro-batch finishes) and kills it at 0.8 of the term: so once a lease has expired, its job is gone for sure,
  and another host may start the pipeline again from its checkpoint without two jobs writing at once;
- a worker on another host reads the lease (alive, ended with an exit code, or lost with its host) and asks for
  a stop by setting `stop` to "term" or "kill"; the supervisor acts on it at its next renewal;
- when the job ends, the supervisor records the exit code and the last lines of the log (secrets redacted), kept
  for ENDED_TTL_SECONDS.

Fields: host, pid, started (the supervisor's process start, epoch s), renewed (epoch s), application (the Spark
application id once the query has started), stop, exit_code, ended (epoch s), log_tail.
No Django here: the supervisor runs beside every job.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

KEY_PREFIX = "clearflow:joblease:"
RENEWALS_PER_TERM = 6
# Renewing fails for this share of the term: the supervisor stops its job; at the second share it kills it.
FENCE_STOP_AT = 0.5
FENCE_KILL_AT = 0.8
ENDED_TTL_SECONDS = 7 * 24 * 3600
STOP_TERM = "term"
STOP_KILL = "kill"


def lease_key(run_dir: str | Path) -> str:
    """The lease of the run whose directory is `run_dir` (`<run root>/<job name>/<run>`): unique per run."""
    path = Path(run_dir)
    return f"{KEY_PREFIX}{path.parent.name}/{path.name}"


@dataclass(frozen=True)
class Lease:
    host: str
    pid: int | None
    renewed: float | None
    application: str | None
    exit_code: int | None  # set once the job has ended
    log_tail: str

    @property
    def ended(self) -> bool:
        return self.exit_code is not None


def _decoded(raw: dict[Any, Any]) -> dict[str, str]:
    def text(value: Any) -> str:
        return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)

    return {text(name): text(value) for name, value in raw.items()}


def _number(fields: dict[str, str], name: str, kind: type) -> Any:
    try:
        return kind(fields[name]) if fields.get(name) else None
    except ValueError:
        return None


def read(client: Any, run_dir: str | Path) -> Lease | None:
    """The run's lease, or None when there is none (expired: the job and maybe its host are gone).
    Redis errors are raised: an unreadable lease says nothing about the job."""
    raw = client.hgetall(lease_key(run_dir))
    if not raw:
        return None
    fields = _decoded(raw)
    return Lease(
        host=fields.get("host", ""),
        pid=_number(fields, "pid", int),
        renewed=_number(fields, "renewed", float),
        application=fields.get("application") or None,
        exit_code=_number(fields, "exit_code", int),
        log_tail=fields.get("log_tail", ""),
    )


def request_stop(client: Any, run_dir: str | Path, *, kill: bool = False) -> bool:
    """Ask the job's supervisor to stop it ("term": after its micro-batch; "kill": now). Whether a live lease
    was there to take the request."""
    # One script: setting a field on a lease that has just expired would create one without a TTL.
    taken = client.eval(_REQUEST_STOP, 1, lease_key(run_dir), STOP_KILL if kill else STOP_TERM)
    return bool(taken)


_REQUEST_STOP = """
if redis.call('EXISTS', KEYS[1]) == 1 and not redis.call('HGET', KEYS[1], 'exit_code') then
  redis.call('HSET', KEYS[1], 'stop', ARGV[1])
  return 1
end
return 0
"""


def write(client: Any, run_dir: str | Path, *, term_seconds: float, **fields: Any) -> str | None:
    """The supervisor's renewal: set `fields`, extend the lease by its term, and return a stop request if any."""
    key = lease_key(run_dir)
    pipe = client.pipeline(transaction=True)
    if fields:
        pipe.hset(key, mapping={name: str(value) for name, value in fields.items()})
    pipe.pexpire(key, max(1000, int(term_seconds * 1000)))
    pipe.hget(key, "stop")
    answer = pipe.execute()[-1]
    return answer.decode() if isinstance(answer, bytes) else answer


def end(client: Any, run_dir: str | Path, *, exit_code: int, ended: float, log_tail: str) -> None:
    """The job has ended: record how, kept long enough for any worker to read it."""
    key = lease_key(run_dir)
    pipe = client.pipeline(transaction=True)
    pipe.hset(key, mapping={"exit_code": str(exit_code), "ended": f"{ended:.3f}", "log_tail": log_tail})
    pipe.hdel(key, "stop")
    pipe.expire(key, ENDED_TTL_SECONDS)
    pipe.execute()
