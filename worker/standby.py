"""Standby jobs, the worker's side: a job process started before any deploy, its JVM and SparkSession up, that
the next deploy on this host hands its pipeline to (`spark_jobs.standby` is the job's side).

A standby runs under `worker.jobwrap` like any job, in its own directory under `<run root>/standby/`: the stack's
stop (`find_jobs` over the run root) stops it with the pipeline jobs. `standby.json` there says how it was
started (supervisor pid and start time, driver memory, Spark settings, master). To take one, a worker

1. claims it (creates `claimed` with O_EXCL: two workers never hand two pipelines to one standby);
2. writes the spec file into its directory (0600, secrets included, as for any job; removed when the job ends);
3. sends the hand-off over the standby's Unix socket (paths and settings, no secret) and reads the answer.

The standby answers yes only when its session honours the run's settings (driver memory, static Spark settings);
otherwise the worker starts the pipeline cold and the run's record says why. From the hand-off on, the standby's
directory is the run's directory and the process is the run's job: stop, kill and the watcher's checks are those
of any job. A standby serves one pipeline only, so nothing of one pipeline reaches another.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from clearflow_spec.protocol import STANDBY_DIR, Handoff, RunFiles
from spark_jobs.standby import socket_path
from worker import jobs

CLAIMED = "claimed"
READY_POLL_SECONDS = 0.2
ANSWER_TIMEOUT_SECONDS = 30.0  # the standby answers at once; a loaded machine may take seconds to schedule it


@dataclass(frozen=True)
class Standby:
    """A standby job found on this host, as `standby.json` describes it."""

    handle: jobs.JobHandle
    driver_memory: str
    conf: tuple[str, ...]
    master: str
    niceness: int = 0  # added to the worker's: a standby started while a deploy's first batch runs waits lower

    @property
    def directory(self) -> Path:
        return Path(self.handle.run_dir)

    @property
    def ready(self) -> bool:
        return (self.directory / RunFiles.CHANNEL).exists()

    def alive(self) -> bool:
        return jobs.job_state(
            pid=self.handle.pid, process_started=self.handle.process_started, run_dir=self.handle.run_dir
        ).alive

    def fits(self, launch: jobs.JobLaunch) -> bool:
        """Started as this launch would start a standby (the settings changed since: it is replaced)."""
        return (self.driver_memory, self.conf, self.master) == (
            launch.driver_memory,
            tuple(launch.spark_conf),
            launch.master,
        )


def root(run_root: Path) -> Path:
    return Path(run_root) / STANDBY_DIR


def is_waiting(run_dir: str | Path) -> bool:
    """A standby's directory that no pipeline took (its job runs no pipeline)."""
    path = Path(run_dir)
    return path.parent.name == STANDBY_DIR and not (path / RunFiles.JOB_NAME).exists()


def job_name_of(run_dir: str | Path) -> str:
    """The job name of the pipeline a run directory belongs to: a standby's says it in a file, others are named
    `<run root>/<job name>/<start>`."""
    path = Path(run_dir)
    with contextlib.suppress(OSError):
        return (path / RunFiles.JOB_NAME).read_text().strip()
    return path.parent.name


def start(launch: jobs.JobLaunch, *, niceness: int = 0) -> Standby:
    """Start a standby job with the launch's master, driver memory and Spark settings (its name, spec,
    checkpoint and trigger are unused: they come with the hand-off), `niceness` below the worker's priority."""
    directory = launch.run_dir
    command = [
        sys.executable, "-m", "spark_jobs.run",
        "--standby", str(directory / RunFiles.CHANNEL),
        "--master", launch.master,
        *jobs.spark_args(launch),
    ]  # fmt: skip
    if jobs.is_cluster(launch.master):
        raise ValueError("standby jobs run on local masters only")
    # The next deploy's first batch runs at this priority (the job lowers it after that batch): the worker's, unless
    # the standby starts beside a deploy's first batch, which its JVM's start must not slow.
    handle = jobs.spawn_supervised(dataclasses.replace(launch, niceness=niceness), directory / RunFiles.SPEC, command)
    standby = Standby(handle, launch.driver_memory, tuple(launch.spark_conf), launch.master, niceness)
    tmp = directory / f".{RunFiles.STANDBY}.tmp"
    tmp.write_text(
        json.dumps(
            {
                "pid": handle.pid,
                "process_started": handle.process_started,
                "driver_memory": standby.driver_memory,
                "conf": list(standby.conf),
                "master": standby.master,
                "niceness": standby.niceness,
            }
        )
    )
    os.replace(tmp, directory / RunFiles.STANDBY)
    return standby


def new_directory(run_root: Path) -> Path:
    return root(run_root) / f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


def waiting(run_root: Path) -> list[Standby]:
    """The live standby jobs of this host under `run_root` that no pipeline took, oldest first."""
    found = []
    base = root(run_root)
    for directory in sorted(base.iterdir()) if base.is_dir() else []:
        if not directory.is_dir() or (directory / CLAIMED).exists():
            continue
        standby = _read(directory)
        if standby is not None and standby.alive():
            found.append(standby)
    return found


def _read(directory: Path) -> Standby | None:
    """The standby `standby.json` in `directory` describes (None: being written, or not a standby's)."""
    try:
        data = json.loads((directory / RunFiles.STANDBY).read_text())
        handle = jobs.JobHandle(
            pid=int(data["pid"]),
            process_started=float(data["process_started"]),
            host=jobs.this_host(),
            run_dir=str(directory),
            log_path=str(directory / RunFiles.LOG),
        )
        return Standby(
            handle, str(data["driver_memory"]), tuple(data["conf"]), str(data["master"]), int(data.get("niceness", 0))
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


@contextlib.contextmanager
def _locked(run_root: Path) -> Iterator[None]:
    """One worker at a time counts and starts standbys on this host."""
    base = root(run_root)
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(base / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure(template: jobs.JobLaunch, *, run_root: Path, count: int, niceness: int = 0) -> list[Standby]:
    """Keep `count` standbys on this host started as `template` says (master, driver memory, Spark settings,
    Redis, lease): stop those started with other settings, and start one if some are missing and none is still
    starting (at `niceness`). Returns the ones it started.

    One at a time: a JVM's start is CPU-bound, and on 2 cores (load 8) two standbys started together were ready
    after 33 and 37 s, one alone after 20 s. One after the other, the first is ready in about half the time and
    the second hardly later; the next deploy takes the first one that is ready."""
    with _locked(run_root):
        fitting, stopped = [], set()
        for standby in waiting(run_root):
            if standby.fits(template) and len(fitting) < count:
                fitting.append(standby)
            elif _claim(standby):  # else a worker is handing it a pipeline: it is that pipeline's job now
                jobs.request_stop(pid=standby.handle.pid, process_started=standby.handle.process_started)
                stopped.add(standby.directory)
        if len(fitting) >= count or _starting(run_root, besides=stopped):
            return []
        if failed_lately(run_root):
            return []  # a standby that cannot start would otherwise take a core every watcher tick
        launch = dataclasses.replace(
            template, name="standby", run_dir=new_directory(run_root), spec=None, checkpoint=""
        )
        return [start(launch, niceness=niceness)]


FAILED_STANDBY_PAUSE_SECONDS = 120.0


def failed_lately(run_root: Path) -> bool:
    """The newest standby that ended without a pipeline failed (exit code not 0) less than a pause ago."""
    base = root(run_root)
    ended = [d for d in base.iterdir() if (d / RunFiles.EXIT_CODE).exists()] if base.is_dir() else []
    for directory in sorted(ended, key=lambda d: (d / RunFiles.EXIT_CODE).stat().st_mtime, reverse=True)[:1]:
        if (directory / RunFiles.JOB_NAME).exists():
            return False
        with contextlib.suppress(OSError, ValueError):
            failed = int((directory / RunFiles.EXIT_CODE).read_text().strip()) != 0
            return (
                failed and time.time() - (directory / RunFiles.EXIT_CODE).stat().st_mtime < FAILED_STANDBY_PAUSE_SECONDS
            )
    return False


def _starting(run_root: Path, *, besides: set[Path]) -> bool:
    """A standby of this host other than those `besides` (being stopped) is still starting: alive, no pipeline,
    not listening yet, claimed (a deploy waits for it) or not."""
    base = root(run_root)
    for directory in sorted(base.iterdir()) if base.is_dir() else []:
        if directory in besides or (directory / RunFiles.JOB_NAME).exists() or (directory / RunFiles.CHANNEL).exists():
            continue
        standby = _read(directory)
        if standby is not None and standby.alive():
            return True
    return False


def _waited_for(run_root: Path) -> bool:
    """A standby of this host is claimed and has no pipeline yet: another deploy is waiting for it to be ready."""
    base = root(run_root)
    return base.is_dir() and any(
        (d / CLAIMED).exists() and not (d / RunFiles.JOB_NAME).exists() and not (d / RunFiles.EXIT_CODE).exists()
        for d in base.iterdir()
        if d.is_dir()
    )


def _claim(standby: Standby) -> bool:
    try:
        fd = os.open(standby.directory / CLAIMED, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def _unclaim(standby: Standby) -> None:
    (standby.directory / CLAIMED).unlink(missing_ok=True)


@dataclass(frozen=True)
class Taken:
    handle: jobs.JobHandle  # the run's job from now on (its directory is the run's)


def take(launch: jobs.JobLaunch, *, run_root: Path, wait: float) -> Taken | str:
    """Hand `launch`'s pipeline to a standby of this host; the job's handle, or why it could not (the caller
    starts the job cold). Waits up to `wait` seconds for a standby that is still starting."""
    if jobs.is_cluster(launch.master):
        return "standby jobs run on local masters only"
    candidates = [s for s in waiting(run_root) if s.master == launch.master]
    if not candidates:
        return "the standby job was taken by another deploy" if _waited_for(run_root) else "no standby job was running"
    fitting = [s for s in candidates if s.driver_memory.lower() == launch.driver_memory.lower()]
    if not fitting:
        return (
            f"the pipeline is sized for a {launch.driver_memory} heap and the standby job has "
            f"{candidates[0].driver_memory}"
        )
    deadline = time.monotonic() + wait
    # Claimed before it is ready: one deploy waits for a standby that is still starting and the others start
    # cold at once. In a burst of deploys (twenty pipelines deployed together) each would otherwise hold one of
    # the worker's processes for the whole wait, and only one of them could have it.
    # Ready ones first, and of those the one at the worker's priority (its first batch then goes before busy jobs).
    for standby in sorted(fitting, key=lambda s: (not s.ready, s.niceness)):
        if not _claim(standby):
            continue
        while not standby.ready:
            if not standby.alive() or time.monotonic() >= deadline:
                _unclaim(standby)
                if not standby.alive():
                    return "the standby job ended"
                return f"the standby job was not ready within {wait:.0f} s"
            time.sleep(READY_POLL_SECONDS)
        outcome = _hand_off(standby, launch)
        if not isinstance(outcome, Taken):
            _unclaim(standby)
        return outcome
    return "the standby job was taken by another deploy"


def _hand_off(standby: Standby, launch: jobs.JobLaunch) -> Taken | str:
    assert launch.spec is not None
    spec_path = jobs.write_spec(standby.directory, launch.spec)
    handoff = Handoff(
        spec=str(spec_path),
        checkpoint=launch.checkpoint,
        trigger_interval=launch.trigger_interval,
        driver_memory=launch.driver_memory,
        conf=tuple(launch.spark_conf),
        niceness=max(0, launch.niceness - standby.niceness),  # after the first batch: where a cold job runs
        idle_after_first_batch=launch.idle_after_first_batch,
    )
    # The job name first: from the answer on, this directory is the pipeline's run (make status, the stack's stop).
    (standby.directory / RunFiles.JOB_NAME).write_text(launch.name)
    try:
        answer = _exchange(standby.directory / RunFiles.CHANNEL, handoff.to_json())
    except (OSError, ValueError) as exc:
        answer = {"accepted": False, "reason": f"the standby job did not answer ({exc})"}
    if answer.get("accepted"):
        return Taken(standby.handle)
    (standby.directory / RunFiles.JOB_NAME).unlink(missing_ok=True)
    spec_path.unlink(missing_ok=True)
    return str(answer.get("reason") or "the standby job refused the pipeline")


def _exchange(channel: Path, message: str) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(ANSWER_TIMEOUT_SECONDS)
        with socket_path(channel) as address:
            connection.connect(address)
        connection.sendall(message.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = connection.recv(4096)
            if not chunk:
                break
            data += chunk
    return json.loads(data.decode() or "{}")
