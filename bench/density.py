"""Many pipelines on one machine (run by hand, not a test; results go to docs/performance.md).

    nice -n 19 ionice -c3 .venv/bin/python bench/density.py [--pipelines 20] [--rate 100] [--minutes 5]

Starts the whole local stack as `make up` does (bench/soak.py's Stack, free ports, removed at the end), creates
--pipelines pipelines through the REST API, each on a topic of its own, with the product's defaults (dedup on a
UUID `id`, 10 min window), and one producer process that sends --rate JSON events/s to every topic (10% of them
re-sends of a recent event's bytes). They are deployed --wave at a time (5), each wave once the one before
runs, and only as many as leave --memory-margin-mb available (at the largest job's PSS so far, plus a
quarter): this machine has no swap, and its OOM killer would pick the largest process, anyone's. Below
--memory-floor-mb available at any time the bench ends (writing what it measured). Then:
- deployed:  how many (all, or where memory stopped the waves, and why);
- running:   seconds from the first deploy until every deployed pipeline is `running`;
- memory:    RSS of each pipeline's job (its process tree: supervisor, Python driver, JVM, Python workers),
             median and max; and its PSS (shared pages counted once: the forked Python workers share most of
             theirs with their daemon), by part; the machine's memory in use (all of its users', not only ours);
- caught up: seconds from the deploys until every pipeline has written what was produced while they started;
- p95:       produced -> visible per pipeline from then on, for --minutes (ClickHouse: `_cf_ingested_at` -
             `produced_at`, the same machine's clocks), the median and the worst pipeline's;
- UI:        the pipeline list page (logged in) and the API's list, 10 requests each while everything runs;
- deploy:    --new-deploys more pipelines (3) deployed one after the other while the others run, each into the
             standby job: deploy -> first row visible (their median), and each one's steps (bench/deploy_start.py:
             pickup, spawn, handoff, query, batch, insert) and first batch's phases;
- idle CPU:  the producer stopped and every pipeline caught up, CPU of all job processes over 60 s;
- load:      the load average at those points;
- exact:     per pipeline, count() and uniqExact(id) against the unique ids produced to its topic;
- heap:      per job's JVM, the heap it was given (-Xmx), committed and used (`jstat -gc`), and live: used
             after a full GC (`jcmd GC.run`), taken last (it stops each JVM for a moment); the JVM's own RSS.
Prints one line per measure and writes them to --out (JSON) if given.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.cookiejar
import json
import multiprocessing
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from bench_pipeline import REPO, _component, _descendants, log, sample_tree
from deploy_start import deploy_once
from soak import Stack, pipeline_spec

sys.path.insert(0, str(REPO))

from localstack.processes import wait_until

RECENT = 1000  # re-sends pick among this many recent events of the topic


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", type=int, default=20)
    parser.add_argument("--rate", type=int, default=100, help="events/s per pipeline")
    parser.add_argument("--minutes", type=float, default=5.0, help="the measured time once every pipeline runs")
    parser.add_argument("--dup-share", type=float, default=0.1)
    parser.add_argument("--wave", type=int, default=5, help="pipelines deployed at a time, each wave once running")
    parser.add_argument(
        "--memory-margin-mb", type=int, default=2048, help="no further wave when it would leave less available"
    )
    parser.add_argument("--memory-floor-mb", type=int, default=1024, help="end the bench below this much available")
    parser.add_argument(
        "--new-deploys", type=int, default=3, help="pipelines deployed beside them, one after the other (median)"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep", action="store_true")
    return parser.parse_args(argv)


def produce_all(bootstrap: str, topics: list[str], rate: int, dup_share: float, stop: Any, unique: Any) -> None:
    """`rate` events/s to each topic until `stop` is set; `unique[i]`: unique ids sent to topics[i]."""
    from confluent_kafka import Producer

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "message.timeout.ms": 0})  # no expiry
    rng = random.Random(25)
    recent: list[list[bytes]] = [[] for _ in topics]
    sent = [0] * len(topics)
    started = time.monotonic()
    while not stop.is_set():
        due = int(rate * (time.monotonic() - started))
        for i, topic in enumerate(topics):
            for _ in range(due - sent[i]):
                if recent[i] and rng.random() < dup_share:
                    value = recent[i][rng.randrange(len(recent[i]))]
                else:
                    value = (
                        f'{{"id":"{uuid.uuid4()}","produced_at":{int(time.time() * 1000)},'
                        f'"user":"user-{unique[i] % 500}","amount":{(unique[i] % 1000) / 7:.2f}}}'
                    ).encode()
                    if len(recent[i]) < RECENT:
                        recent[i].append(value)
                    else:
                        recent[i][unique[i] % RECENT] = value
                    unique[i] += 1
                # A starved broker (load 50-90 while 15 JVMs started) fills the client's queue: wait for room
                # rather than die with events counted as sent (the 20-pipeline run lost its producer so).
                while True:
                    try:
                        producer.produce(topic, value, partition=sent[i] % 2)
                        break
                    except BufferError:
                        producer.poll(0.5)
                sent[i] += 1
        producer.poll(0)
        time.sleep(0.01)
    producer.flush(120)


def create_topics(bootstrap: str, topics: list[str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 2, 1) for t in topics]).values():
        future.result(60)


def job_pids(stack: Stack, pipeline_ids: list[int]) -> dict[int, int]:
    pids = {}
    for pk in pipeline_ids:
        runs = stack.api("GET", f"pipelines/{pk}/runs/")
        if runs and runs[0]["ended_at"] is None and runs[0]["pid"]:
            pids[pk] = runs[0]["pid"]
    return pids


def tree_pss(pid: int) -> dict[str, int]:
    """Proportional set size of a job's process tree by part (jvm, python_driver, python_workers), bytes: the
    forked Python workers share most of their pages with their daemon, which RSS would count in each of them."""
    parts = {"jvm": 0, "python_driver": 0, "python_workers": 0}
    for member in _descendants(pid):
        with contextlib.suppress(OSError, ValueError, KeyError):
            for line in Path(f"/proc/{member}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    parts[_part(member)] += int(line.split()[1]) * 1024
    return parts


def _part(pid: int) -> str:
    """jvm, python_workers (PySpark's daemon, here `spark_jobs.python_daemon`, and the workers it forks) or
    python_driver (the runner and its supervisor)."""
    component = _component(pid)
    if component == "jvm":  # its command line names the daemon's module too (spark.python.daemon.module)
        return component
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    if b"spark_jobs.python_daemon" in argv or b"pyspark.daemon" in argv:
        return "python_workers"
    return component


def machine_used_mb() -> int:
    """This machine's memory in use (MemTotal - MemAvailable), MB."""
    info = {
        k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    }
    return round((info["MemTotal"] - info["MemAvailable"]) / 1024)


def tree_cpu(pid: int) -> dict[tuple[int, int], float]:
    """CPU seconds of each process of a job's tree, its own only (utime + stime), keyed by (pid, start tick): a
    Python worker that ends between two samples takes its time with it, which the children's times of its
    parent would not give back (the daemon does not wait for its workers), so the sum of two samples is not
    comparable; `cpu_between` compares process by process."""
    found = {}
    for member in _descendants(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            found[(member, int(fields[19]))] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found


def cpu_between(before: dict[tuple[int, int], float], after: dict[tuple[int, int], float]) -> float:
    """CPU seconds used between two `tree_cpu` samples: the processes in both, and all of those started since
    (those that ended in between are missed: a lower bound)."""
    return sum(used - before.get(key, 0.0) for key, used in after.items())


def _jstat(pid: int) -> dict[str, float]:
    """`jstat -gc` of a JVM as {column: KB}; {} when it does not answer."""
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        out = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True, timeout=60).stdout
        rows = [line.split() for line in out.splitlines() if line.strip()]
        if len(rows) >= 2:
            with contextlib.suppress(ValueError):
                return {k: float(v) for k, v in zip(rows[0], rows[1], strict=False)}
    return {}


def jvm_heap(supervisor: int, *, full_gc: bool = True) -> dict[str, Any] | None:
    """The heap of a job's JVM in MB: its -Xmx, committed and used now, and live (used after a full GC, when
    `full_gc`); the JVM's RSS. None when the job has no JVM (any more)."""
    jvms = [pid for pid in _descendants(supervisor) if _safe_component(pid) == "jvm"]
    if not jvms:
        return None
    pid = jvms[0]
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    xmx = next((a.decode()[4:] for a in argv if a.startswith(b"-Xmx")), "")
    before = _jstat(pid)
    if full_gc:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=60, check=False)
    after = _jstat(pid) if full_gc else {}

    def mb(row: dict[str, float], names: tuple[str, ...]) -> int | None:
        return round(sum(row[n] for n in names) / 1024) if row and all(n in row for n in names) else None

    rss = None
    with contextlib.suppress(OSError, ValueError):
        rss = round(int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * 4096 / 2**20)
    return {
        "xmx": xmx,
        "committed_mb": mb(before, ("S0C", "S1C", "EC", "OC")),
        "used_mb": mb(before, ("S0U", "S1U", "EU", "OU")),
        "live_mb": mb(after, ("S0U", "S1U", "EU", "OU")),
        "metaspace_mb": mb(before, ("MU",)),
        "jvm_rss_mb": rss,
    }


def heap_summary(heaps: list[dict[str, Any] | None]) -> dict[str, Any]:
    """Median and max of each of `jvm_heap`'s figures over the jobs, and the -Xmx they ran with."""
    found = [h for h in heaps if h is not None]
    return {
        key: {"median": statistics.median(vals), "max": max(vals)}
        for key in ("committed_mb", "used_mb", "live_mb", "metaspace_mb", "jvm_rss_mb")
        if (vals := [h[key] for h in found if h[key] is not None])
    } | {"xmx": sorted({h["xmx"] for h in found})}


def _safe_component(pid: int) -> str:
    try:
        return _component(pid)
    except OSError:
        return ""


def p95_ms(clickhouse: Any, table: str, since_ms: int) -> float | None:
    value = clickhouse.command(
        "SELECT quantile(0.95)(toUnixTimestamp64Milli(_cf_ingested_at) - toUnixTimestamp64Milli(produced_at)) "
        f"FROM `{table}` WHERE _cf_ingested_at >= fromUnixTimestamp64Milli({int(since_ms)})"
    )
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def ui_timings(stack: Stack, requests: int = 10) -> dict[str, float]:
    """Seconds per request: the pipeline list page (logged in as the admin) and the API's pipeline list."""
    base = f"http://127.0.0.1:{stack.ports['web']}"
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{base}/login/", timeout=60).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    password = (stack.var_dir / "secrets" / "admin_password").read_text().strip()
    form = {"username": "admin", "password": password, "csrfmiddlewaretoken": token.group(1) if token else ""}
    request = urllib.request.Request(  # noqa: S310 - the local stack
        f"{base}/login/", data=urllib.parse.urlencode(form).encode(), headers={"Referer": f"{base}/login/"}
    )
    opener.open(request, timeout=60).read()
    timings: dict[str, list[float]] = {"page": [], "api": []}
    for _ in range(requests):
        started = time.monotonic()
        body = opener.open(f"{base}/", timeout=60).read()
        timings["page"].append(time.monotonic() - started)
        started = time.monotonic()
        stack.api("GET", "pipelines/")
        timings["api"].append(time.monotonic() - started)
    if b"login" in body[:2000].lower() and b"logout" not in body.lower():
        log("the page answered a login form: its timing is the login page's")
    return {f"{k}_median_s": statistics.median(v) for k, v in timings.items()} | {
        f"{k}_max_s": max(v) for k, v in timings.items()
    }


def memory_available_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 0


def statuses(stack: Stack, ids: list[int]) -> list[str]:
    return [stack.api("GET", f"pipelines/{pk}/status/")["status"] for pk in ids]


def all_running(stack: Stack, ids: list[int]) -> bool:
    return all(status == "running" for status in statuses(stack, ids))


def deploy_in_waves(stack: Stack, ids: list[int], *, wave: int, margin_mb: int, results: dict[str, Any]) -> list[int]:
    """Deploy `ids` `wave` at a time, each wave once the one before runs, and only as many as leave `margin_mb`
    of this machine's memory available at the largest PSS of the jobs running so far plus a quarter for growth:
    a machine without swap would otherwise have its OOM killer pick the largest process, anyone's. Returns the
    pipelines deployed (all of them running, or the bench stops)."""
    deployed: list[int] = []
    per_job_mb = 0.0
    while len(deployed) < len(ids):
        available = memory_available_mb()
        fit = int((available - margin_mb) / (per_job_mb * 1.25)) if per_job_mb else wave
        batch = ids[len(deployed) : len(deployed) + min(wave, fit)]
        if not batch:
            results["stopped_deploying"] = (
                f"memory: {available} MB available with {len(deployed)} running at up to {per_job_mb:.0f} MB PSS "
                f"each: one more (plus a quarter for growth) would leave less than {margin_mb} MB"
            )
            log(f"not deploying more: {results['stopped_deploying']}")
            break
        for pk in batch:
            stack.api("POST", f"pipelines/{pk}/deploy/")
        deployed += batch

        if not wait_until(functools.partial(all_running, stack, list(deployed)), timeout=1800, interval=5.0):
            raise SystemExit(f"not all running after 30 min: {statuses(stack, deployed)}")
        pids = job_pids(stack, deployed)
        per_job_mb = max(sum(tree_pss(pid).values()) for pid in pids.values()) / 2**20
        log(f"{len(deployed)} running; {memory_available_mb()} MB available, the largest job {per_job_mb:.0f} MB PSS")
    results["deployed"] = len(deployed)
    return deployed


class MemoryWatch:
    """Ends the bench (SIGINT to itself: the stack is stopped) when this machine's available memory falls below
    `floor_mb`, before the kernel's OOM killer picks a process; `tripped` says it did."""

    def __init__(self, floor_mb: int) -> None:
        self.floor_mb = floor_mb
        self.tripped = ""
        self.lowest_mb = memory_available_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> MemoryWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(2.0):
            available = memory_available_mb()
            self.lowest_mb = min(self.lowest_mb, available)
            if available < self.floor_mb and not self.tripped:
                self.tripped = f"{available} MB available, below {self.floor_mb} MB"
                log(f"memory watch: {self.tripped}; ending the bench")
                os.kill(os.getpid(), signal.SIGINT)


def main() -> int:
    args = parse_args()
    stack = Stack(keep=args.keep)
    results: dict[str, Any] = {"pipelines": args.pipelines, "rate": args.rate}
    results["load_before"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    results["machine_memory_used_mb_before"] = machine_used_mb()
    stop = multiprocessing.Event()
    producer = None
    watch = MemoryWatch(args.memory_floor_mb).start()
    try:
        log(f"starting the stack in {stack.var_dir}")
        stack.start()
        import clickhouse_connect
        import redis

        clickhouse = clickhouse_connect.get_client(host="127.0.0.1", port=stack.ports["clickhouse"])
        bootstrap = stack.env["KAFKA_BOOTSTRAP_SERVERS"]
        kafka = stack.api("POST", "connections/kafka/", {"name": "density kafka", "bootstrap_servers": bootstrap})
        ch_body = {"name": "density ch", "host": "127.0.0.1", "port": stack.ports["clickhouse"]}
        ch = stack.api("POST", "connections/clickhouse/", ch_body)
        names = [f"density-{i:02d}-{uuid.uuid4().hex[:6]}" for i in range(args.pipelines)]
        tables = [name.replace("-", "_") for name in names]
        create_topics(bootstrap, names)
        unique = multiprocessing.Array("l", args.pipelines, lock=False)
        producer = multiprocessing.get_context("fork").Process(
            target=produce_all, args=(bootstrap, names, args.rate, args.dup_share, stop, unique), daemon=True
        )
        producer.start()
        ids = []
        for name, table in zip(names, tables, strict=True):
            spec = pipeline_spec(name, table, window="10m", time_mode="ingestion")
            body = {"name": name, "kafka_connection": kafka["id"], "clickhouse_connection": ch["id"], "spec": spec}
            ids.append(stack.api("POST", "pipelines/", body)["id"])
        deployed = time.monotonic()
        ids = deploy_in_waves(stack, ids, wave=args.wave, margin_mb=args.memory_margin_mb, results=results)
        names, tables = names[: len(ids)], tables[: len(ids)]  # those deployed (the others' topics fill unread)
        results["all_running_after_s"] = round(time.monotonic() - deployed, 1)
        log(f"{len(ids)} running after {results['all_running_after_s']:.0f} s")
        results["load"] = {"all_running": os.getloadavg()}
        # The events produced while the jobs started wait in their topics: the latency counts from when every
        # pipeline has caught up with them, not from the start's backlog.
        backlog = list(unique)[: len(tables)]

        def caught_up_with(wanted: list[int]) -> bool:
            counts = [int(clickhouse.command(f"SELECT count() FROM `{t}`")) for t in tables]
            return all(c >= e for c, e in zip(counts, wanted, strict=True))

        # At most 5 minutes: jobs that cannot keep up never catch up, and that is a result (the p95 shows it).
        caught_up = wait_until(lambda: caught_up_with(backlog), timeout=300, interval=2.0)
        results["caught_up_after_s"] = round(time.monotonic() - deployed, 1) if caught_up else None
        log(
            f"caught up with the start's backlog ({sum(backlog)} events): {caught_up}, "
            f"at {time.monotonic() - deployed:.0f} s"
        )
        measure_from_ms = time.time() * 1000
        time.sleep(args.minutes * 60 / 2)

        pids = job_pids(stack, ids)
        rss = [sample_tree(pid, {}) for pid in pids.values()]
        results["rss_per_pipeline_mb"] = {
            "median": round(statistics.median(rss) / 2**20),
            "max": round(max(rss) / 2**20),
            "total": round(sum(rss) / 2**20),
        }
        log(f"memory per pipeline: {results['rss_per_pipeline_mb']}")
        pss = [tree_pss(pid) for pid in pids.values()]
        by_part = {part: statistics.median(p[part] for p in pss) for part in ("jvm", "python_driver", "python_workers")}
        results["pss_per_pipeline_mb"] = {
            "median": round(statistics.median(sum(p.values()) for p in pss) / 2**20),
            "max": round(max(sum(p.values()) for p in pss) / 2**20),
            "total": round(sum(sum(p.values()) for p in pss) / 2**20),
            **{f"{part}_median": round(value / 2**20) for part, value in by_part.items()},
        }
        log(f"memory per pipeline, shared pages counted once (PSS): {results['pss_per_pipeline_mb']}")
        results["machine_memory_used_mb"] = machine_used_mb()
        results["heap_under_load_mb"] = heap_summary([jvm_heap(pid, full_gc=False) for pid in pids.values()])
        log(f"heap under load: {results['heap_under_load_mb']}")
        results["load"]["mid"] = os.getloadavg()
        results["ui"] = ui_timings(stack)
        log(f"UI: {results['ui']}")
        # More pipelines (100 events waiting in each topic), one after the other, each deployed into the worker's
        # standby job once it waits: deploy -> first row visible, and the steps before it (bench/deploy_start.py).
        new_deploys = []
        for index in range(args.new_deploys):
            steps = deploy_once(
                stack,
                clickhouse,
                redis.Redis.from_url(stack.env["REDIS_URL"]),
                (kafka["id"], ch["id"]),
                index,
                100,
                wait_standby=True,
            )
            new_deploys.append(steps)
            log(f"new deploy {index + 1}: first row {steps['visible']:.2f} s; steps: {steps}")
        if new_deploys:
            results["new_deploy_first_row_s"] = statistics.median(steps["visible"] for steps in new_deploys)
            results["new_deploys"] = new_deploys
            log(f"a new deploy's first row, median of {len(new_deploys)}: {results['new_deploy_first_row_s']:.2f} s")
        time.sleep(args.minutes * 60 / 2)

        p95 = {name: p95_ms(clickhouse, table, measure_from_ms) for name, table in zip(names, tables, strict=True)}
        known = [v for v in p95.values() if v is not None]
        results["p95_ms"] = {
            "median": statistics.median(known) if known else None,
            "max": max(known) if known else None,
            "per_pipeline": p95,
        }
        log(f"p95 produced -> visible: median {results['p95_ms']['median']} ms, worst {results['p95_ms']['max']} ms")

        results["load"]["end_of_load"] = os.getloadavg()
        stop.set()
        producer.join(timeout=180)
        expected = list(unique)[: len(tables)]
        wait_until(lambda: caught_up_with(expected), timeout=600, interval=2.0)
        time.sleep(10)
        pids = job_pids(stack, ids)
        before = {pk: tree_cpu(pid) for pk, pid in pids.items()}
        time.sleep(60)
        after = {pk: tree_cpu(pid) for pk, pid in pids.items()}
        idle = sum(cpu_between(before[pk], after[pk]) for pk in before if pk in after) / 60
        results["load"]["idle"] = os.getloadavg()
        results["idle_cpu_cores_all_jobs"] = round(idle, 3)
        results["idle_cpu_percent_per_pipeline"] = round(100 * idle / max(1, len(before)), 2)
        log(f"idle CPU: {idle:.3f} cores for {len(before)} jobs")

        exact = []
        for table, wanted in zip(tables, expected, strict=True):
            total, distinct = clickhouse.query(f"SELECT count(), uniqExact(id) FROM `{table}`").result_rows[0]
            exact.append(int(total) == int(distinct) == wanted)
        results["exact_rows"] = f"{sum(exact)}/{len(exact)}"
        results["heap_idle_mb"] = heap_summary([jvm_heap(pid) for pid in job_pids(stack, ids).values()])
        log(f"heap once idle (live: after a full GC): {results['heap_idle_mb']}")
        results["restarts"] = sum(max(0, len(stack.api("GET", f"pipelines/{pk}/runs/")) - 1) for pk in ids)
        results["machine_memory_used_mb_idle"] = machine_used_mb()
        results["load_after"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        log(f"exact rows: {results['exact_rows']}, restarts {results['restarts']}")
        return 0
    except KeyboardInterrupt:
        results["aborted"] = watch.tripped or "interrupted"
        return 1
    finally:
        watch.stop()
        results["lowest_memory_available_mb"] = watch.lowest_mb
        print(json.dumps(results, indent=2))
        if args.out:  # also what was measured before an abort
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=2))
        stop.set()
        if producer is not None:
            producer.join(timeout=30)
        log("stopping the stack")
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
