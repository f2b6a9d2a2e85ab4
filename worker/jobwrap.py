"""The small supervisor each job runs under: `python -m worker.jobwrap --run-dir DIR [--spec FILE] -- COMMAND...`.

It detaches (double fork and a Unix session of its own), so the job outlives the Celery worker that started it
and no worker keeps it as a zombie child; it prints its pid on stdout and returns at once. Then, in the run
directory, it appends the job's output to `job.log`, waits for the job, writes the exit code to `exit_code`,
and removes the spec file (it holds secrets) whatever happens to the worker meanwhile.

SIGTERM is passed on to the job's Python driver only (not to the whole group: Spark's JVM would shut down under
the running micro-batch), so the job can finish its batch. A forced stop is SIGKILL to the whole group, done by
the worker (`worker.jobs.force_kill`).

No Django here: this module runs beside every job.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from spark_jobs.protocol import ExitCode, RunFiles


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


def _supervise(run_dir: Path, spec: Path | None, command: list[str]) -> int:
    with open(run_dir / RunFiles.LOG, "ab", buffering=0) as log:
        log.write(f"clearflow: job starting (supervisor pid {os.getpid()})\n".encode())
        child = subprocess.Popen(command, cwd=run_dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

        def forward(signum: int, _frame: object) -> None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(_driver(child), signal.SIGTERM)

        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)
        code = child.wait()
        log.write(
            f"clearflow: job exited with code {code} at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n".encode()
        )
    tmp = run_dir / f".{RunFiles.EXIT_CODE}.tmp"
    tmp.write_text(str(code))
    os.replace(tmp, run_dir / RunFiles.EXIT_CODE)
    if spec is not None:
        spec.unlink(missing_ok=True)
    return code


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        raise SystemExit("usage: python -m worker.jobwrap --run-dir DIR [--spec FILE] -- COMMAND...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m worker.jobwrap")
    parser.add_argument("--run-dir", required=True, type=Path)
    parser.add_argument("--spec", type=Path)
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
    os.write(write_end, f"{os.getpid()}\n".encode())
    os.close(write_end)
    try:
        code = _supervise(args.run_dir, args.spec, command)
    except BaseException:
        code = ExitCode.WRAPPER_FAILED
        (args.run_dir / RunFiles.EXIT_CODE).write_text(str(code))
        if args.spec is not None:
            args.spec.unlink(missing_ok=True)
    os._exit(code)


if __name__ == "__main__":
    main()
