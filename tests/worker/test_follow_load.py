"""A pipeline follows its load: deployed on a quiet topic and then given many times the rate, it is re-sized while
it runs and writes every row once; one that cannot keep up says so (its lag, its pace, the "behind" alert), and
the alert resolves once it has caught up. Against the real broker, ClickHouse, Redis and Spark (worker.lag)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from tests.worker.helpers import (
    JOB_TIMEOUT,
    URL,
    api_spec,
    create_pipeline,
    event,
    events,
    produce,
    table_counts,
    wait_for,
    wait_status,
)

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]


class PacedLoad:
    """Unique events at `per_second` for `seconds` or until `stop()`, in tenths of a second, from a thread; `sent`
    counts them."""

    def __init__(self, bootstrap: str, topic: str, *, prefix: str, per_second: int, seconds: float) -> None:
        self.sent = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(bootstrap, topic, prefix, per_second, seconds), daemon=True
        )
        self._thread.start()

    def _run(self, bootstrap: str, topic: str, prefix: str, per_second: int, seconds: float) -> None:
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds and not self._stopped.is_set():
            due = int(elapsed * per_second)
            if due > self.sent:
                produce(bootstrap, topic, [(i % 2, event(f"{prefix}-{i:07d}", n=i)) for i in range(self.sent, due)])
                self.sent = due
            self._stopped.wait(0.1)

    def stop(self) -> int:
        """No more events once what is due now is sent; the number sent."""
        self._stopped.set()
        return self.join()

    def join(self) -> int:
        self._thread.join()
        return self.sent


def pace_of(api, pk: int) -> dict | None:
    return api.get(f"{URL}{pk}/").json().get("pace")


@pytest.mark.timeout(1500)  # three starts of the job (deploy, re-size, resume) on the shared cores
def test_a_pipeline_deployed_on_a_quiet_topic_is_re_sized_when_the_load_comes_and_writes_every_row_once(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker, worker_env
):
    table = f"follow_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, events("q", 20, 0))  # a quiet topic: 20 events, then nothing
    worker_env.update(
        {
            "CLEARFLOW_DRIVER_MEMORY": "auto",
            "CLEARFLOW_TRIGGER_INTERVAL": "auto",
            "CLEARFLOW_LAG_INTERVAL": "2",
            "CLEARFLOW_RESIZE_SETTLE": "10",
        }
    )
    celery_worker.start()
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table))
    api.post(f"{URL}{pk}/deploy/")
    wait_status(api, pk, "running", worker=celery_worker)
    wait_for(lambda: table_counts(ch, table) == (20, 20), timeout=JOB_TIMEOUT)
    [first] = [r for r in api.get(f"{URL}{pk}/runs/").json() if r["ended_at"] is None]
    assert first["driver_memory"] == "512m"  # sized as a light pipeline: the topic was quiet
    # The lag as read from the broker and the checkpoint, on the worker's own schedule: all 20 read.
    wait_for(lambda: (p := pace_of(api, pk)) and p["state"] == "keeping_up" and p["lag"] == 0, timeout=JOB_TIMEOUT)

    # Then 2,500 events a second, over 100 times the quiet rate and more than a light pipeline takes.
    load = PacedLoad(kafka_bootstrap, topic, prefix="busy", per_second=2_500, seconds=40)

    def resized() -> dict | None:
        runs = api.get(f"{URL}{pk}/runs/").json()
        return next((r for r in runs if r["outcome"] == "resized"), None)

    old = wait_for(resized, timeout=JOB_TIMEOUT, interval=1)
    assert old["reason"].startswith("Re-sized: events arrive at ")
    assert ", sized for " in old["reason"]
    status = wait_status(api, pk, "running", worker=celery_worker)
    assert status["status"] == "running"
    [new] = [r for r in api.get(f"{URL}{pk}/runs/").json() if r["ended_at"] is None]
    assert new["driver_memory"] == "1g"  # the busy heap
    assert new["start"].startswith("Re-sized (events arrive at ")
    assert "restarted with a 1g heap" in new["start"]
    timeline = [t["reason"] for t in api.get(f"{URL}{pk}/history/").json()]
    assert any(reason.startswith("Re-sizing: events arrive at ") for reason in timeline)
    expected = 20 + load.stop()  # events arrived all through the re-size: enough

    # Caught up: every event once, nothing lost or doubled across the re-size, and the lag back to a batch's worth.
    wait_for(lambda: table_counts(ch, table) == (expected, expected), timeout=JOB_TIMEOUT, interval=1)
    # The last batch is in ClickHouse a moment before its commit is in the checkpoint: a reading after it says 0.
    wait_for(lambda: (p := pace_of(api, pk)) and p["state"] == "keeping_up" and p["lag"] == 0, timeout=JOB_TIMEOUT)

    # Stopped while events go on arriving, then resumed on that backlog: its page shows the backlog before the first
    # batch is done, it reads it in bounded batches, and every event is written once.
    api.post(f"{URL}{pk}/stop/")
    wait_status(api, pk, "stopped", worker=celery_worker)
    backlog = events("backlog", 30_000, 3_000)
    produce(kafka_bootstrap, topic, backlog)
    api.post(f"{URL}{pk}/resume/")
    behind = wait_for(lambda: (p := pace_of(api, pk)) and p["lag"] >= 30_000 and p, timeout=JOB_TIMEOUT)
    assert behind["lag"] <= 33_000
    expected += 30_000
    wait_for(lambda: table_counts(ch, table) == (expected, expected), timeout=JOB_TIMEOUT, interval=1)
    wait_for(lambda: (p := pace_of(api, pk)) and p["state"] == "keeping_up" and p["lag"] == 0, timeout=JOB_TIMEOUT)


@pytest.mark.timeout(1500)  # three starts of the job (deploy, re-size, a new version)
def test_a_pipeline_that_cannot_keep_up_is_behind_in_words_and_its_alert_fires_then_resolves(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker, worker_env
):
    from webapp.alerts.models import AlertIncident, AlertRule

    table = f"behind_{uuid.uuid4().hex[:8]}"
    worker_env.update({"CLEARFLOW_LAG_INTERVAL": "2", "CLEARFLOW_ALERT_INTERVAL": "2"})
    celery_worker.start()
    # At most 100 events a micro-batch at 200 ms triggers (about 500/s at best on these cores, each batch's fixed
    # cost included) while 1,000 arrive a second until the alert fires (its minute behind and more): the lag grows.
    spec = api_spec(topic, table)
    spec["source"]["max_records_per_batch"] = 100
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=spec)
    AlertRule.objects.filter(pipeline_id=pk, kind="behind").update(minutes=1)
    produce(kafka_bootstrap, topic, events("b", 10, 0))
    api.post(f"{URL}{pk}/deploy/")
    wait_status(api, pk, "running", worker=celery_worker)
    load = PacedLoad(kafka_bootstrap, topic, prefix="burst", per_second=1_000, seconds=150)

    behind = wait_for(lambda: (p := pace_of(api, pk)) and p["state"] == "behind" and p, timeout=JOB_TIMEOUT)
    assert behind["summary"].startswith("Behind: lag ")
    assert "events arrive at" in behind["summary"]
    assert behind["cause"]  # a cause, in words
    assert behind["cause_words"]

    incident = wait_for(
        lambda: AlertIncident.objects.filter(pipeline_id=pk, kind="behind").first(), timeout=JOB_TIMEOUT, interval=1
    )
    assert incident.summary.startswith("Behind: lag ")
    expected = 10 + load.stop()  # the load has done its part: the alert fired while it lasted
    # What its words say to do: let it read more a batch (a new version), and it catches up; the alert resolves.
    spec["source"]["max_records_per_batch"] = 500_000
    assert api.patch(f"{URL}{pk}/", {"spec": spec}, format="json").status_code == 200
    api.post(f"{URL}{pk}/deploy/")
    wait_for(
        lambda: AlertIncident.objects.filter(pk=incident.pk, resolved_at__isnull=False).exists(),
        timeout=JOB_TIMEOUT * 2,
        interval=2,
    )
    wait_for(lambda: table_counts(ch, table) == (expected, expected), timeout=JOB_TIMEOUT * 2, interval=1)
