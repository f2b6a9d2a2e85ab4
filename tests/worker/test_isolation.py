"""Pipelines on one machine do not stop each other: while one pipeline's ClickHouse table is dropped and another
gets a flood of bad events and its job is killed the way the kernel's OOM killer kills (SIGKILL to the whole
process tree), a third one keeps running with one run, writes every event exactly once, and never leaves
`running`. The killed one restarts by itself, says why in its run and history, and drops the repeats of what it
wrote before the kill. Real Celery worker, Spark jobs, Kafka and ClickHouse."""

from __future__ import annotations

import os
import signal
import threading
import uuid

import pytest

from tests.worker.helpers import (
    JOB_TIMEOUT,
    URL,
    api_spec,
    create_pipeline,
    events,
    produce,
    table_counts,
    wait_for,
    wait_status,
)

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]


def new_topic(kafka_bootstrap: str) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"iso-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})  # kept until the result: its handle serves it
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    return name


def bad_flood(prefix: str, count: int) -> list[tuple[int, bytes | dict]]:
    """Mostly unusable events (not JSON, no key, 100 kB of junk) with a few good ones among them."""
    records: list[tuple[int, bytes | dict]] = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            records.append((i % 2, {"event_id": f"{prefix}-{i:06d}", "n": i}))
        elif kind == 1:
            records.append((i % 2, b"{not json"))
        elif kind == 2:
            records.append((i % 2, {"n": i}))  # no dedup key
        else:
            records.append((i % 2, b"x" * 100_000))
    return records


def history(api, pk: int) -> list[tuple[str, str]]:
    return [(h["from_status"], h["to_status"]) for h in reversed(api.get(f"{URL}{pk}/history/").json())]


@pytest.mark.timeout(1800)  # three pipelines' starts and two restarts on the shared cores
def test_a_dropped_table_a_bad_flood_and_a_killed_job_leave_the_other_pipeline_running(
    api, kafka_conn, ch_conn, kafka_bootstrap, ch, celery_worker
):
    topics = {name: new_topic(kafka_bootstrap) for name in ("healthy", "dropped", "flooded")}
    tables = {name: f"iso_{name}_{uuid.uuid4().hex[:6]}" for name in topics}
    for name, topic in topics.items():
        produce(kafka_bootstrap, topic, events(name[0], 200, 20))
    celery_worker.start()
    ids = {
        name: create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topics[name], tables[name]))
        for name in topics
    }
    for pk in ids.values():
        api.post(f"{URL}{pk}/deploy/")
    for name, pk in ids.items():
        wait_status(api, pk, "running", worker=celery_worker)
        wait_for(lambda n=name: table_counts(ch, tables[n]) == (200, 200), timeout=JOB_TIMEOUT)
    [healthy_run] = api.get(f"{URL}{ids['healthy']}/runs/").json()

    # The healthy pipeline gets a steady trickle of new events for the whole time the others break.
    stop_trickle = threading.Event()
    trickled = [0]  # unique events sent

    def trickle() -> None:
        while not stop_trickle.is_set():
            produce(kafka_bootstrap, topics["healthy"], events(f"t{trickled[0]:05d}", 20, 2))
            trickled[0] += 20
            stop_trickle.wait(1.0)

    trickler = threading.Thread(target=trickle)
    trickler.start()
    try:
        # A ClickHouse table dropped under a running pipeline, with events still coming for it.
        ch.command(f"DROP TABLE `{tables['dropped']}`")
        produce(kafka_bootstrap, topics["dropped"], events("d2", 100, 10))
        # A flood of bad events, and the flooded job killed mid-flood as the OOM killer would.
        produce(kafka_bootstrap, topics["flooded"], bad_flood("f2", 4_000))
        flooded_run = api.get(f"{URL}{ids['flooded']}/runs/").json()[0]
        os.killpg(flooded_run["pid"], signal.SIGKILL)

        def restarted(name: str) -> bool:
            runs = api.get(f"{URL}{ids[name]}/runs/").json()
            return len(runs) >= 2 and runs[0]["running_at"] is not None

        wait_for(lambda: restarted("flooded"), timeout=JOB_TIMEOUT, interval=1.0)
        wait_for(lambda: restarted("dropped"), timeout=JOB_TIMEOUT, interval=1.0)
    finally:
        stop_trickle.set()
        trickler.join(timeout=120)

    # The healthy pipeline: every event once, the same run all along, never out of `running`.
    expected = 200 + trickled[0]
    assert trickled[0] >= 100  # it ran while the others broke
    wait_for(lambda: table_counts(ch, tables["healthy"]) == (expected, expected), timeout=JOB_TIMEOUT)
    [same_run] = api.get(f"{URL}{ids['healthy']}/runs/").json()
    assert same_run["id"] == healthy_run["id"] and same_run["ended_at"] is None
    assert history(api, ids["healthy"]) == [("draft", "deploy_requested"), ("deploy_requested", "running")]

    # The broken ones failed on their own and healed: the dropped table is made again by the restarted job
    # (the rows dropped with it are gone, the later events are there once); the flood's good events once, the
    # rest as dead letters.
    dropped_runs = api.get(f"{URL}{ids['dropped']}/runs/").json()
    assert dropped_runs[-1]["outcome"] == "failed" and dropped_runs[-1]["cause"] == "clickhouse_table", dropped_runs
    wait_for(lambda: table_counts(ch, tables["dropped"]) == (100, 100), timeout=JOB_TIMEOUT)
    flooded_runs = api.get(f"{URL}{ids['flooded']}/runs/").json()  # newest first
    killed, again = flooded_runs[-1], flooded_runs[-2]
    assert killed["outcome"] == "failed" and killed["cause"] == "killed", flooded_runs
    assert "killed or lost" in killed["reason"] and killed["log_tail"]  # in words, and the log's last lines
    assert again["attempt"] == 2 and again["pid"] != killed["pid"]
    flooded_history = [
        (h["from_status"], h["to_status"], h["reason"])
        for h in reversed(api.get(f"{URL}{ids['flooded']}/history/").json())
    ]
    assert [h[:2] for h in flooded_history] == [
        ("draft", "deploy_requested"),
        ("deploy_requested", "running"),
        ("running", "failed"),
        ("failed", "deploy_requested"),
        ("deploy_requested", "running"),
    ]
    assert "killed or lost" in flooded_history[2][2] and "Restarting now" in flooded_history[2][2]
    # Repeats of the events written before the kill, then a new one on each partition: the restarted job drops the
    # repeats (its dedup state came back from the checkpoint) and writes the new ones once.
    produce(kafka_bootstrap, topics["flooded"], events("f", 200, 20) + events("f-after", 2, 0))
    wait_for(lambda: table_counts(ch, tables["flooded"])[0] >= 1_202, timeout=JOB_TIMEOUT)
    assert table_counts(ch, tables["flooded"]) == (1_202, 1_202)
    dead = f"{tables['flooded']}_dlq"
    wait_for(lambda: ch.command(f"SELECT count() FROM `{dead}`") == 3_000, timeout=JOB_TIMEOUT)
