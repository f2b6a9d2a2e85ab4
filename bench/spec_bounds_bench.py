"""How long a pipeline spec takes to validate as it grows, and whether oversized specs can starve the web app.

    # validation time against the number of source fields (each size in its own process, with a time limit)
    .venv/bin/python bench/spec_bounds_bench.py validate --fields 2000 5000 10000 55000 --timeout 60
    # the same against another checkout (a baseline): its code is imported instead of this tree's
    .venv/bin/python bench/spec_bounds_bench.py validate --code /path/to/checkout --fields 1000 2000
    # the checks alone, linear in the spec's size: the count caps switched off in the measuring process
    .venv/bin/python bench/spec_bounds_bench.py validate --without-caps --fields 1000 10000 55000

    # load: a gunicorn like `make up`'s (2 workers x 4 threads); 8 55,000-field specs posted at once to
    # /api/v1/pipelines/validate/, again and again (or, --mode flood, 8 clients without pause) while a probe
    # times the login page and the pipelines list
    .venv/bin/python bench/spec_bounds_bench.py load --bodies 8 --seconds 30 [--mode flood]
    # the same server from another checkout (a baseline), with smaller bodies
    .venv/bin/python bench/spec_bounds_bench.py load --code /path/to/checkout --fields 5000 --seconds 30

`load` needs PostgreSQL as `make test` sets it up (the DATABASE_URL of the settings); it creates a throwaway
database, a user and an API token, and removes the database afterwards. Numbers: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def wide_spec(n_fields: int) -> dict:
    """A spec whose source declares `n_fields` fields (f0, f1, ...): the shape of the body that once took minutes."""
    return {
        "version": 1,
        "name": "wide",
        "source": {
            "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
            "topics": ["events"],
            "fields": [{"path": f"f{i}", "type": "string"} for i in range(n_fields)],
        },
        "dedup": {"keys": ["f0"], "window": "1h"},
        "sink": {
            "clickhouse": {"host": "127.0.0.1", "database": "default"},
            "table": "wide",
            "columns": [{"field": "f0", "column": "f0", "type": "String"}],
        },
    }


_ONE = """
import json, os, sys, time
if os.environ.get("CF_BENCH_WITHOUT_CAPS"):
    import clearflow_spec.limits as limits
    limits._SIZE_LIMITS = ()
from clearflow_spec.spec import SpecError, parse_spec
spec = json.loads(sys.stdin.read())
started = time.perf_counter()
try:
    parse_spec(spec)
    outcome = "valid"
except SpecError as exc:
    outcome = "refused: " + str(exc.errors[0])[:120]
print(json.dumps({"seconds": time.perf_counter() - started, "outcome": outcome}))
"""


def validate(args: argparse.Namespace) -> None:
    code = Path(args.code).resolve() if args.code else REPO
    env = {**os.environ, "PYTHONPATH": str(code)}
    if args.without_caps:
        env["CF_BENCH_WITHOUT_CAPS"] = "1"
    print(f"code: {code}  caps: {'off' if args.without_caps else 'on'}  load average: {os.getloadavg()[0]:.2f}")
    print(f"{'fields':>8} {'body MB':>8} {'median s':>9}  outcome")
    for n in args.fields:
        body = json.dumps(wide_spec(n))
        times: list[float] = []
        outcome = ""
        for _ in range(args.runs):
            try:
                result = subprocess.run(
                    [sys.executable, "-c", _ONE],
                    input=body,
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=args.timeout,
                    cwd=code,
                    check=True,
                )
            except subprocess.TimeoutExpired:
                times, outcome = [], f"no answer within {args.timeout:g} s"
                break
            answer = json.loads(result.stdout)
            times.append(answer["seconds"])
            outcome = answer["outcome"]
        median = f"{statistics.median(times):9.3f}" if times else f"{'>' + format(args.timeout, 'g'):>9}"
        print(f"{n:>8} {len(body) / 1e6:>8.2f} {median}  {outcome}", flush=True)


# --- load ------------------------------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _manage(env: dict[str, str], *argv: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *argv], cwd=REPO, env=env, capture_output=True, text=True, check=True
    ).stdout


def _timed_get(url: str, headers: dict[str, str]) -> tuple[float, int]:
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - a local http URL
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310 - a local URL
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    return time.perf_counter() - started, status


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[float, int]:
    request = urllib.request.Request(  # noqa: S310 - a local http URL
        url, data=body, headers={**headers, "Content-Type": "application/json"}
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=300) as response:  # noqa: S310 - a local URL
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        exc.read()
        status = exc.code
    except OSError:
        status = -1
    return time.perf_counter() - started, status


def _quantiles(values: list[float]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    median = statistics.median(ordered)
    return f"median {median * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"


def load(args: argparse.Namespace) -> None:
    import dj_database_url

    code = Path(args.code).resolve() if args.code else REPO
    base_url = os.environ.get("DATABASE_URL", "postgres://clearflow@127.0.0.1:5432/clearflow")
    database = f"bench_bounds_{os.getpid()}"
    db = dj_database_url.parse(base_url)
    var_dir = tempfile.mkdtemp(prefix="bench-bounds-")
    env = {
        **os.environ,
        "DATABASE_URL": base_url.rsplit("/", 1)[0] + "/" + database,
        "CLEARFLOW_VAR_DIR": var_dir,
        "DJANGO_SETTINGS_MODULE": "webapp.config.settings",
    }
    psql_env = {**os.environ, "PGPASSWORD": db.get("PASSWORD") or ""}
    target = ["-w", "-h", db["HOST"] or "127.0.0.1", "-p", str(db["PORT"] or 5432), "-U", db["USER"]]
    subprocess.run(["createdb", *target, database], check=True, env=psql_env)
    port = _free_port()
    server = None
    try:
        _manage(env, "migrate", "--noinput")
        token = (
            _manage(
                env,
                "shell",
                "-c",
                "from django.contrib.auth import get_user_model; from webapp.api.tokens import api_token_create; "
                "u = get_user_model().objects.create_user('bench', password='bench-pass-123'); "
                "print(api_token_create(user=u, name='bench')[1])",
            )
            .strip()
            .splitlines()[-1]
        )
        bin_dir = Path(sys.executable).parent
        server = subprocess.Popen(
            [
                str(bin_dir / "gunicorn"),
                "webapp.config.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "2",
                "--threads",
                "4",
                "--timeout",
                "600",
            ],
            cwd=code,
            env={**env, "PYTHONPATH": str(code)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Token {token}"}
        deadline = time.monotonic() + 60
        while True:
            try:
                if _timed_get(f"{url}/login/", {})[1] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("gunicorn did not answer within 60 s")
            time.sleep(0.2)
        probes = [f"{url}/login/", f"{url}/api/v1/pipelines/"]

        def probe_for(seconds: float) -> list[float]:
            times: list[float] = []
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for probe in probes:
                    elapsed, status = _timed_get(probe, headers if "/api/" in probe else {})
                    assert status == 200, (probe, status)
                    times.append(elapsed)
                time.sleep(0.1)
            return times

        print(f"code: {code}  load average before: {os.getloadavg()[0]:.2f}")
        idle = probe_for(min(10.0, args.seconds))
        print(f"UI probes, idle:              {_quantiles(idle)} ({len(idle)} requests)")

        body = json.dumps({"spec": wide_spec(args.fields)}).encode()
        stop = threading.Event()
        answers: list[tuple[float, int]] = []

        def send() -> None:
            answers.append(_post(f"{url}/api/v1/pipelines/validate/", body, headers))

        def flood() -> None:  # one of N clients, each sending again as soon as it has its answer
            while not stop.is_set():
                send()

        def bursts() -> None:  # N bodies at once, again one second after the last answer
            while not stop.is_set():
                wave = [threading.Thread(target=send) for _ in range(args.bodies)]
                for thread in wave:
                    thread.start()
                for thread in wave:
                    thread.join()
                stop.wait(1.0)

        if args.mode == "flood":
            threads = [threading.Thread(target=flood, daemon=True) for _ in range(args.bodies)]
        else:
            threads = [threading.Thread(target=bursts, daemon=True)]
        for thread in threads:
            thread.start()
        loaded = probe_for(args.seconds)
        stop.set()
        for thread in threads:
            thread.join(timeout=600)
        what = f"{args.bodies} x {args.fields:,}-field bodies ({args.mode})"
        print(f"UI probes, {what}: {_quantiles(loaded)} ({len(loaded)} requests)")
        statuses = sorted({status for _, status in answers})
        print(
            f"attack bodies answered: {len(answers)}, statuses {statuses}, "
            f"{_quantiles([elapsed for elapsed, _ in answers])}"
        )
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a worker still busy with a body: no graceful end
                server.kill()
                server.wait(timeout=30)
        subprocess.run(["dropdb", *target, "--if-exists", database], check=False, env=psql_env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    modes = parser.add_subparsers(dest="mode", required=True)
    one = modes.add_parser("validate")
    one.add_argument("--fields", type=int, nargs="+", default=[2000, 5000, 10000, 55000])
    one.add_argument("--runs", type=int, default=3)
    one.add_argument("--timeout", type=float, default=60.0)
    one.add_argument("--code", help="a checkout whose spark_jobs to import (default: this one)")
    one.add_argument("--without-caps", action="store_true", help="switch the count caps off (the checks alone)")
    many = modes.add_parser("load")
    many.add_argument("--bodies", type=int, default=8)
    many.add_argument("--fields", type=int, default=55_000)
    many.add_argument("--seconds", type=float, default=30.0)
    many.add_argument(
        "--mode",
        choices=["burst", "flood"],
        default="burst",
        help="burst: N bodies at once, again a second after the last answer; flood: N clients sending without pause",
    )
    many.add_argument("--code", help="a checkout whose web app to serve (default: this one)")
    args = parser.parse_args()
    validate(args) if args.mode == "validate" else load(args)


if __name__ == "__main__":
    main()
