"""Job processes: start a pipeline's Spark job detached from the worker, signal it, inspect it, read its log.

Knows processes and files, not Django models. A job runs under `worker.jobwrap` (its own Unix session, its own
log file, exit code written to its run directory), so restarting the Celery worker leaves it running and the
next worker finds it again from the pid and start time recorded in its `PipelineRun`.

- Local masters (`local[N]`): `python -m spark_jobs.run`.
- `spark://` masters: `spark-submit` in client mode, with `spark_jobs` zipped and shipped via `--py-files`, so
  executors on other machines need only Python and the pinned packages.

Secrets travel only in the spec file (mode 0600, removed when the job ends) and the environment (Redis URL),
never on a command line; log tails are redacted before they leave this module.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from pydantic import BaseModel, SecretStr

from clearflow_spec.protocol import STARTED_LINE_RE, RunFiles, host_id, local_checkpoint_path
from clearflow_spec.sizing import LIGHT_TRIGGER, driver_java_options
from clearflow_spec.spec import PipelineSpec
from spark_jobs.jars import job_jars, object_store_jars
from spark_jobs.object_store import bucket_of, is_object_store, key_prefix
from spark_jobs.s3_client import S3Client

REPO_ROOT = Path(__file__).resolve().parents[1]
REDACTED = "**********"
JOB_MALLOC_ARENAS = "2"  # glibc malloc arenas of a job process (MALLOC_ARENA_MAX; job_env says why)


@dataclass(frozen=True)
class JobLaunch:
    """Everything needed to start one run of a job (nothing secret except `spec`, which goes to a 0600 file).
    A standby job (`worker.standby`) has no spec yet: it comes with the hand-off."""

    name: str
    run_dir: Path
    checkpoint: str
    master: str
    spec: PipelineSpec | None
    redis_url: str | None = None
    driver_memory: str = "1g"
    trigger_interval: str = LIGHT_TRIGGER
    spark_conf: tuple[str, ...] = ()
    submit_args: tuple[str, ...] = ()
    extra_env: Mapping[str, str] = field(default_factory=dict)
    lease_seconds: float = 0.0  # the term of the run's lease in Redis (worker.leases); 0: no lease
    niceness: int = 0  # the job's CPU priority (os.nice of its processes; settings.PIPELINE_JOB_NICENESS says why)
    # A light pipeline: after its first micro-batch the job runs in the idle CPU class (spark_jobs.cpu_priority)
    idle_after_first_batch: bool = False


@dataclass(frozen=True)
class JobHandle:
    """How to find a started job again: the supervisor's pid (also its process group) and start time."""

    pid: int
    process_started: float
    host: str
    run_dir: str
    log_path: str


@dataclass(frozen=True)
class JobState:
    alive: bool
    exit_code: int | None = None  # once ended: the job's exit code, or None when unknown (killed, lost)


def this_host() -> str:
    return host_id()


def is_cluster(master: str) -> bool:
    return master.startswith("spark://")


def write_spec(run_dir: Path, spec: PipelineSpec) -> Path:
    """Write the spec with its secrets, readable by this user only, created so from the start (no window)."""
    run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = run_dir / RunFiles.SPEC
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(spec.to_json(reveal_secrets=True))
    return path


# What executors import: the engine and the rules it stands on (an executor's sink checks values against the
# spec's types). A cluster's hosts have neither installed.
ENGINE_PACKAGES = ("spark_jobs", "clearflow_spec")


def engine_zip(target_dir: Path) -> Path:
    """The engine's packages (ENGINE_PACKAGES) as a zip for `--py-files` (rebuilt when the code is newer)."""
    sources = [path for package in ENGINE_PACKAGES for path in sorted((REPO_ROOT / package).rglob("*.py"))]
    target = target_dir / "spark_jobs.zip"
    newest = max(p.stat().st_mtime for p in sources)
    if target.exists() and target.stat().st_mtime >= newest:
        return target
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sources:
            archive.write(path, path.relative_to(REPO_ROOT))
    os.replace(tmp, target)
    return target


def spark_home() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent)


def spark_args(launch: JobLaunch) -> list[str]:
    """The runner's Spark arguments: driver memory, the JVM options that go with it and settings (a standby job
    starts with the same)."""
    java_options = driver_java_options(launch.driver_memory)  # a light heap's lean JVM (clearflow_spec.sizing)
    return [
        "--driver-memory", launch.driver_memory,
        # One argument: a value that starts with '-' would read as an option of its own.
        *([f"--driver-java-options={java_options}"] if java_options else []),
        "--conf", "spark.ui.showConsoleProgress=false",  # progress bars would fill the log
        *[arg for item in launch.spark_conf for arg in ("--conf", item)],
    ]  # fmt: skip


def job_command(launch: JobLaunch, spec_path: Path) -> list[str]:
    """The job's command line (no secrets: those are in the spec file and the environment)."""
    runner_args = [
        "--spec", str(spec_path),
        "--checkpoint", launch.checkpoint,
        "--trigger-interval", launch.trigger_interval,
        *(["--idle-after-first-batch"] if launch.idle_after_first_batch else []),
        *spark_args(launch),
    ]  # fmt: skip
    if not is_cluster(launch.master):
        return [sys.executable, "-m", "spark_jobs.run", "--master", launch.master, *runner_args]
    spark_submit = str(Path(spark_home()) / "bin" / "spark-submit")
    py_files = engine_zip(launch.run_dir.parent)
    # The driver's JVM starts before the runner here: its options go to spark-submit (the light ones with them).
    driver_options = " ".join(filter(None, ["-Xss32m", driver_java_options(launch.driver_memory)]))
    return [
        spark_submit,
        "--master", launch.master,
        "--deploy-mode", "client",
        "--name", f"clearflow-{launch.name}",
        "--driver-memory", launch.driver_memory,
        "--conf", f"spark.driver.extraJavaOptions={driver_options}",
        "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", f"spark.pyspark.driver.python={sys.executable}",
        "--py-files", str(py_files),
        # Spark's Kafka connector from this install; the driver serves the jars to executors on other hosts.
        "--jars", ",".join([*job_jars(), *(object_store_jars() if is_object_store(launch.checkpoint) else [])]),
        *launch.submit_args,
        str(REPO_ROOT / "spark_jobs" / "run.py"),
        *runner_args,
    ]  # fmt: skip


def start_job(launch: JobLaunch) -> JobHandle:
    """Write the spec, start the job detached under `worker.jobwrap`, and return how to find it again."""
    if launch.spec is None:
        raise ValueError("a job needs a spec (a standby job is started by worker.standby)")
    launch.run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    spec_path = write_spec(launch.run_dir, launch.spec)
    try:
        return spawn_supervised(launch, spec_path, job_command(launch, spec_path))
    except RuntimeError:
        spec_path.unlink(missing_ok=True)
        raise


def job_env(launch: JobLaunch) -> dict[str, str]:
    """The job's environment: this worker's, the launch's extras, this interpreter for Spark's Python."""
    env = {**os.environ, **launch.extra_env, "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.setdefault("SPARK_HOME", spark_home())  # spark-submit's scripts look for it with whatever `python3` is first
    # RocksDB allocates from many Spark task threads; glibc gives each thread its own 64 MB malloc arena and
    # keeps their freed pages, so the job's RSS grew ~75 MB a minute past RocksDB's bound (a 20k events/s soak,
    # 295 arenas). Two arenas keep that memory reusable; an operator may set another value.
    env.setdefault("MALLOC_ARENA_MAX", JOB_MALLOC_ARENAS)
    if launch.redis_url:
        env["CLEARFLOW_REDIS_URL"] = launch.redis_url  # may hold a password: not on the command line
    return env


def spawn_supervised(launch: JobLaunch, spec_path: Path, command: list[str]) -> JobHandle:
    """Start `command` detached under `worker.jobwrap` in the launch's run directory (which removes `spec_path`
    when the job ends); how to find it again."""
    launch.run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    wrapped = [
        sys.executable, "-m", "worker.jobwrap",
        "--run-dir", str(launch.run_dir), "--spec", str(spec_path),
        "--lease-seconds", str(launch.lease_seconds if launch.redis_url else 0),
        "--niceness", str(launch.niceness), "--",
        *command,
    ]  # fmt: skip
    launcher = subprocess.run(
        wrapped,
        cwd=launch.run_dir,
        env=job_env(launch),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if launcher.returncode != 0 or not launcher.stdout.strip().isdigit():
        raise RuntimeError(f"the job launcher failed: {launcher.stderr.strip()[-500:] or launcher.returncode}")
    pid = int(launcher.stdout.strip())
    return handle_of(pid, launch.run_dir)


def handle_of(pid: int, run_dir: Path) -> JobHandle:
    """The handle of the supervisor `pid` running in `run_dir` (its start time read now)."""
    return JobHandle(
        pid=pid,
        process_started=psutil.Process(pid).create_time(),
        host=this_host(),
        run_dir=str(run_dir),
        log_path=str(run_dir / RunFiles.LOG),
    )


def live_process(pid: int | None, process_started: float | None) -> psutil.Process | None:
    """The live process with this pid and start time (a reused pid or a zombie is not it); any start time when
    `process_started` is None."""
    if not pid:
        return None
    try:
        process = psutil.Process(pid)
        if process_started is not None and abs(process.create_time() - process_started) > 0.05:
            return None
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process
    except psutil.Error:
        return None


def job_state(*, pid: int | None, process_started: float | None, run_dir: str) -> JobState:
    if live_process(pid, process_started) is not None:
        return JobState(alive=True)
    try:
        return JobState(alive=False, exit_code=int((Path(run_dir) / RunFiles.EXIT_CODE).read_text().strip()))
    except (OSError, ValueError):
        return JobState(alive=False)


def request_stop(*, pid: int | None, process_started: float | None) -> bool:
    """SIGTERM to the supervisor, which passes it to the driver: it stops after its current micro-batch."""
    process = live_process(pid, process_started)
    if process is None:
        return False
    process.send_signal(signal.SIGTERM)
    return True


def force_kill(*, pid: int | None, process_started: float | None) -> bool:
    """SIGKILL to every process of the job (supervisor, driver, JVM, Spark's Python daemon and workers). Nothing is
    lost: offsets are in the checkpoint and the sink is idempotent per batch, so the cut batch is replayed."""
    process = live_process(pid, process_started)
    if process is None:
        return False
    return kill_session(process.pid) > 0


def session_members(session: int) -> list[int]:
    """The live processes of the Unix session `session` (a job's supervisor starts one: its pid is its id)."""
    members = []
    for process in psutil.process_iter(["pid", "status"]):
        if process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        with contextlib.suppress(OSError):
            if os.getsid(process.info["pid"]) == session:
                members.append(process.info["pid"])
    return members


def kill_session(session: int, *, timeout: float = 5.0) -> int:
    """SIGKILL to every process of a job's session; how many there were. Not only its process group: Spark's
    Python daemon moves itself and the workers it forks into a group of their own (`pyspark.daemon`:
    `os.setpgid(0, 0)`), so a SIGKILL to the supervisor's group left them running, waiting to notice that the
    JVM was gone."""
    killed: set[int] = set()
    # Until the session is empty (bounded): again for a worker the daemon forked between the listing and its own
    # kill, and for a process that got its SIGKILL but has not exited yet (a caller checks "gone" right after).
    deadline = time.monotonic() + timeout
    while True:
        members = [pid for pid in session_members(session) if pid != os.getpid()]
        if not members:
            break
        for member in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(member, signal.SIGKILL)
        killed.update(members)
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return len(killed)


def wait_gone(*, pid: int | None, process_started: float | None, timeout: float) -> bool:
    process = live_process(pid, process_started)
    if process is None:
        return True
    try:
        process.wait(timeout=timeout)
    except psutil.TimeoutExpired:
        return False
    except psutil.Error:
        pass
    return True


def memory_bytes(*, pid: int | None, process_started: float | None) -> int:
    """Resident memory of the job's whole process tree (supervisor, driver, JVM, Python workers)."""
    process = live_process(pid, process_started)
    if process is None:
        return 0
    total = 0
    for member in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += member.memory_info().rss
    return total


def find_jobs(run_root: Path) -> list[JobHandle]:
    """The job supervisors running on this host whose run directory is under `run_root`: every job started with
    that run root (by any worker of a stack), whatever the database says."""
    root = run_root.resolve()
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "create_time"]):
        command = process.info["cmdline"] or []
        if "worker.jobwrap" not in command or "--run-dir" not in command:
            continue
        if process.info["pid"] != _group_of(process.info["pid"]):
            continue  # the launcher half of the fork, about to exit
        index = command.index("--run-dir") + 1
        run_dir = Path(command[index]) if index < len(command) else None
        if run_dir is None or not run_dir.resolve().is_relative_to(root):
            continue
        found.append(
            JobHandle(
                pid=process.info["pid"],
                process_started=process.info["create_time"],
                host=this_host(),
                run_dir=str(run_dir),
                log_path=str(run_dir / RunFiles.LOG),
            )
        )
    return found


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def mark_stopped_with_stack(run_dir: str) -> None:
    """Note in the run directory that the stack stops this job (read back by `stopped_with_stack`)."""
    with contextlib.suppress(OSError):
        (Path(run_dir) / RunFiles.STOPPED_WITH_STACK).write_text(f"{time.time():.3f}\n")


def stopped_with_stack(run_dir: str) -> bool:
    return bool(run_dir) and (Path(run_dir) / RunFiles.STOPPED_WITH_STACK).exists()


@dataclass(frozen=True)
class StopResult:
    handle: JobHandle
    forced: bool  # SIGKILL after the timeout (the cut micro-batch is replayed at the next start)


def stop_jobs(handles: Iterable[JobHandle], *, timeout: float) -> list[StopResult]:
    """Stop jobs on this host all at once: SIGTERM (each finishes its micro-batch), SIGKILL to every one still
    running after `timeout` seconds; then whatever is left of each job's session (Spark's Python daemon and
    workers, a JVM still exiting) is killed too. Returns once every one is gone, within about `timeout` seconds
    whatever their number: the jobs are waited for together, not one after the other."""
    handles = [h for h in handles if live_process(h.pid, h.process_started) is not None]
    for handle in handles:
        request_stop(pid=handle.pid, process_started=handle.process_started)
    deadline = time.monotonic() + timeout
    running = list(handles)
    while running and time.monotonic() < deadline:
        time.sleep(0.1)
        running = [h for h in running if live_process(h.pid, h.process_started) is not None]
    forced = {h.pid for h in running}
    for handle in running:
        force_kill(pid=handle.pid, process_started=handle.process_started)
    for handle in handles:
        if handle.pid in forced:
            wait_gone(pid=handle.pid, process_started=handle.process_started, timeout=10)
        kill_session(handle.pid)  # the supervisor led its own session: only its leftovers remain
    return [StopResult(handle, handle.pid in forced) for handle in handles]


def remove_spec(run_dir: str) -> None:
    (Path(run_dir) / RunFiles.SPEC).unlink(missing_ok=True)


def remove_checkpoint(checkpoint: str) -> bool:
    """Delete a checkpoint: a local directory, or the objects under an s3a:// prefix (other URIs, hdfs://, are
    left to their storage's tools). Whether it existed. S3Error when S3 refuses."""
    if is_object_store(checkpoint):
        return S3Client.from_env().delete_prefix(bucket_of(checkpoint), key_prefix(checkpoint)) > 0
    path = local_checkpoint_path(checkpoint)
    if path is None or not path.exists():
        return False
    shutil.rmtree(path)
    return True


def secret_values(spec: PipelineSpec) -> list[str]:
    """The secrets of a job spec (its `SecretStr` fields: passwords, private keys), to redact from what leaves
    the worker."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, SecretStr):
            if node.get_secret_value():
                found.append(node.get_secret_value())
        elif isinstance(node, BaseModel):
            for name in type(node).model_fields:
                walk(getattr(node, name))
        elif isinstance(node, list | tuple):
            for item in node:
                walk(item)

    walk(spec)
    return found


_SECRET_SETTING = re.compile(r"(?i)((?:password|passwd|secret|sasl\.password|token)[\"']?\s*[=:]\s*[\"']?)[^\s\"',}]+")


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
        for line in secret.splitlines():  # a PEM key may show up line by line
            if len(line.strip()) >= 16:
                text = text.replace(line.strip(), REDACTED)
    return _SECRET_SETTING.sub(lambda m: m.group(1) + REDACTED, text)


def log_tail(log_path: str, *, lines: int = 100, secrets: Iterable[str] = (), max_bytes: int = 256 * 1024) -> str:
    """The last `lines` lines of a job's log, secrets redacted ("" when there is no log)."""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return redact("\n".join(data.splitlines()[-lines:]), secrets)


def log_size(log_path: str) -> int:
    try:
        return os.stat(log_path).st_size
    except OSError:
        return -1


def started_application(log_path: str) -> str | None:
    """The Spark application id once the job logged that its streaming query started, else None."""
    found = STARTED_LINE_RE.findall(log_tail(log_path, lines=400))
    return found[-1] if found else None
