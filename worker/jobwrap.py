"""The small supervisor each job runs under: `python -m worker.jobwrap --run-dir DIR [--spec FILE] -- COMMAND...`.

It detaches (double fork and a Unix session of its own), so the job outlives the Celery worker that started it
and no worker keeps it as a zombie child; it prints its pid on stdout and returns at once. Then, in the run
directory, it appends the job's output to `job.log`, waits for the job, writes the exit code to `exit_code`,
and removes the spec file (it holds secrets) whatever happens to the worker meanwhile.

SIGTERM is passed on to the job's Python driver only (not to the whole group: Spark's JVM would shut down under
the running micro-batch), so the job can finish its batch. A forced stop is SIGKILL to the whole group, done by
the worker (`worker.jobs.force_kill`).

With `--lease-seconds` (and CLEARFLOW_REDIS_URL in the environment) it also holds the run's lease in Redis
(`worker.leases`), through which workers on other hosts watch and stop the job; it stops its own job when it
cannot renew the lease.

No Django here: this module runs beside every job.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clearflow_spec.protocol import STARTED_LINE_RE, ExitCode, RunFiles, host_id
from worker import leases


def _driver(child: subprocess.Popen) -> int:
    """The pid to send SIGTERM to: the Python driver running `spark_jobs`'s runner (under spark-submit it is
    a grandchild of the JVM), else the direct child."""
    import psutil

    try:
        for process in psutil.Process(child.pid).children(recursive=True):
            cmdline = " ".join(process.cmdline())
            if "python" in cmdline and ("spark_jobs.run" in cmdline or "spark_jobs/run.py" in cmdline):
                return process.pid
    except psutil.Error:
        pass
    return child.pid


def _kill_job() -> None:
    """SIGKILL to the job and everything it started: every other process of this supervisor's session (its own,
    from `setsid`), not this supervisor, which still records the exit. A session, not the child's tree: Spark's
    Python daemon and its workers leave the JVM's process group and outlive it as orphans, and a JVM may still be
    in its shutdown hooks after its Python driver exited. Used when the lease is lost and when the job ends, so
    nothing outlives the supervisor however the job was stopped."""
    from worker.jobs import kill_session

    with contextlib.suppress(Exception):  # the supervisor goes on to record the exit whatever happens here
        kill_session(os.getpid())


class LeaseHolder:
    """Holds the run's lease in Redis (see `worker.leases`): renews it, passes on stop requests from workers on
    other hosts, finds the Spark application id in the log, and stops the job when the lease cannot be renewed."""

    def __init__(
        self, *, redis_url: str, run_dir: Path, term_seconds: float, log_path: Path, identity: dict[str, Any]
    ) -> None:
        self.redis_url = redis_url
        self.identity = identity  # host, pid, started: written at every renewal (the first one may fail)
        self.run_dir = run_dir
        self.term = term_seconds
        self.log_path = log_path
        self.renew_every = max(0.5, term_seconds / leases.RENEWALS_PER_TERM)
        self.renewed_at = time.monotonic()  # the start counts as a renewal: the fence clock starts now
        self.application: str | None = None
        self._log_offset = 0
        self._stopping = False
        self.fenced = False  # it stopped its job because the lease could not be renewed
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            import redis

            timeout = max(1.0, min(5.0, self.renew_every / 2))
            self._client = redis.Redis.from_url(self.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout)
        return self._client

    def renew(self) -> str | None:
        """Extend the lease; the stop request found in it, if any. Raises on a Redis error."""
        if self.application is None:
            self.application = self._find_application()
        fields = {**self.identity, "renewed": f"{time.time():.3f}"}
        if self.application:
            fields["application"] = self.application
        try:
            request = leases.write(self.client(), self.run_dir, term_seconds=self.term, **fields)
        except Exception:
            self._client = None
            raise
        self.renewed_at = time.monotonic()
        return request

    def _find_application(self) -> str | None:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                chunk = log.read(1024 * 1024)
        except OSError:
            return None
        whole_lines = chunk[: chunk.rfind(b"\n") + 1]  # the rest is read again next time
        self._log_offset += len(whole_lines)
        found = STARTED_LINE_RE.findall(whole_lines.decode("utf-8", errors="replace"))
        return found[-1] if found else None

    def tick(self, *, stop: Callable[[], None], kill: Callable[[], None], say: Callable[[str], None]) -> None:
        """One renewal: act on a stop request, or on a lease that could not be renewed for too long."""
        try:
            request = self.renew()
        except Exception as exc:
            lost_for = time.monotonic() - self.renewed_at
            if lost_for >= self.term * leases.FENCE_KILL_AT:
                self.fenced = True
                say(f"the lease could not be renewed for {lost_for:.0f} s ({exc}): killing the job")
                kill()
            elif lost_for >= self.term * leases.FENCE_STOP_AT and not self._stopping:
                self._stopping = self.fenced = True
                say(
                    f"the lease could not be renewed for {lost_for:.0f} s ({exc}): stopping the job, since a worker "
                    "on another host may start this pipeline again once the lease expires"
                )
                stop()
            return
        if request == leases.STOP_KILL:
            say("a worker asked to kill the job")
            kill()
        elif request == leases.STOP_TERM and not self._stopping:
            self._stopping = True
            say("a worker asked to stop the job")
            stop()

    def end(self, *, exit_code: int, log_tail: str) -> None:
        with contextlib.suppress(Exception):
            leases.end(self.client(), self.run_dir, exit_code=exit_code, ended=time.time(), log_tail=log_tail)


def _spec_secrets(spec: Path | None) -> list[str]:
    """The secret values in the spec file (read before it is removed), to redact from the log tail it records."""
    if spec is None:
        return []
    try:
        from worker.jobs import secret_values

        return secret_values(json.loads(spec.read_text()))
    except (OSError, ValueError, ImportError):
        return []


def _log_tail(log_path: Path, secrets: list[str], lines: int = 200) -> str:
    try:
        from worker.jobs import log_tail

        return log_tail(str(log_path), lines=lines, secrets=secrets)
    except ImportError:
        return ""


def _supervise(
    run_dir: Path, spec: Path | None, command: list[str], lease: LeaseHolder | None, *, niceness: int = 0
) -> int:
    with open(run_dir / RunFiles.LOG, "ab", buffering=0) as log:

        def say(message: str) -> None:
            log.write(f"clearflow: {message}\n".encode())

        say(f"job starting (supervisor pid {os.getpid()})")
        # The job's processes inherit its niceness; the supervisor keeps its own, so its lease renewals stay on
        # time when the jobs take every core. It has no threads, so a preexec_fn is safe here.
        child = subprocess.Popen(
            command,
            cwd=run_dir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=(lambda: os.nice(niceness)) if niceness else None,
        )

        def stop() -> None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(_driver(child), signal.SIGTERM)

        signal.signal(signal.SIGTERM, lambda _signum, _frame: stop())
        signal.signal(signal.SIGINT, lambda _signum, _frame: stop())
        while True:
            try:
                code = child.wait(timeout=lease.renew_every if lease is not None else None)
                break
            except subprocess.TimeoutExpired:
                assert lease is not None
                lease.tick(stop=stop, kill=_kill_job, say=say)
        _kill_job()
        if lease is not None and lease.fenced:
            code = ExitCode.LEASE_LOST
        say(f"job exited with code {code} at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    # Read now, not at the start: a standby job's spec file arrives with its pipeline (worker.standby).
    secrets = _spec_secrets(spec) if lease is not None else []
    tmp = run_dir / f".{RunFiles.EXIT_CODE}.tmp"
    tmp.write_text(str(code))
    os.replace(tmp, run_dir / RunFiles.EXIT_CODE)
    if spec is not None:
        spec.unlink(missing_ok=True)
    if lease is not None:
        lease.end(exit_code=code, log_tail=_log_tail(run_dir / RunFiles.LOG, secrets))
    return code


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        raise SystemExit("usage: python -m worker.jobwrap --run-dir DIR [--spec FILE] -- COMMAND...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m worker.jobwrap")
    parser.add_argument("--run-dir", required=True, type=Path)
    parser.add_argument("--spec", type=Path)
    parser.add_argument("--lease-seconds", type=float, default=0.0, help="hold the run's lease in Redis (0: none)")
    parser.add_argument("--niceness", type=int, default=0, help="the job's CPU priority, added to this process's")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]

    read_end, write_end = os.pipe()
    if os.fork() > 0:  # the caller's child: report the supervisor's pid, then exit (the caller reaps us)
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            sys.stdout.write(pipe.read())
        sys.stdout.flush()
        os._exit(0)
    os.close(read_end)
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    lease = _take_lease(args.run_dir, args.lease_seconds)
    os.write(write_end, f"{os.getpid()}\n".encode())
    os.close(write_end)
    try:
        code = _supervise(args.run_dir, args.spec, command, lease, niceness=args.niceness)
    except BaseException:
        code = ExitCode.WRAPPER_FAILED
        (args.run_dir / RunFiles.EXIT_CODE).write_text(str(code))
        if args.spec is not None:
            args.spec.unlink(missing_ok=True)
    os._exit(code)


def _take_lease(run_dir: Path, term_seconds: float) -> LeaseHolder | None:
    """Write the lease before the pid is reported (so a worker that records the run finds it); a Redis that does
    not answer now is retried at each renewal (and the job stops itself if it never answers)."""
    redis_url = os.environ.get("CLEARFLOW_REDIS_URL")
    if term_seconds <= 0 or not redis_url:
        return None
    import psutil

    identity = {"host": host_id(), "pid": os.getpid(), "started": f"{psutil.Process().create_time():.3f}"}
    lease = LeaseHolder(
        redis_url=redis_url,
        run_dir=run_dir,
        term_seconds=term_seconds,
        log_path=run_dir / RunFiles.LOG,
        identity=identity,
    )
    with contextlib.suppress(Exception):
        lease.renew()
    return lease


if __name__ == "__main__":
    main()
