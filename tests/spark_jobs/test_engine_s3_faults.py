"""A checkpoint on an object store that refuses the dedup state's writes: the micro-batch fails in words, and the
restart writes each key exactly once.

The state store commits at the end of a task's partition, after the rows were handed on to the sink's Python worker
in Arrow batches of 10,000; a commit refused there fails the task with its last, unfinished Arrow batch unsent. The
sink then saw a partition that looked whole and inserted part of it, and the replay's whole insert under the same
token wrote those rows twice (ClickHouse keeps an insert whose rows differ from the one it saw)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from engine_helpers import JOB_TIMEOUT, event, job_command, make_spec, produce, wait_for

from tests.s3_faults import FailingS3Proxy

pytestmark = pytest.mark.spark


def start_job(spec_file: Path, checkpoint: str, log: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(
            job_command(spec_file, checkpoint, "--trigger-interval", "200 milliseconds"),
            cwd="/",
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def test_state_writes_refused_mid_batch_fail_the_job_and_the_restart_writes_each_key_once(
    kafka_bootstrap, clickhouse_server, ch, new_topic, s3_store, tmp_path
):
    store = FailingS3Proxy(s3_store.endpoint).start()
    env = {**s3_store.env(), "CLEARFLOW_S3_ENDPOINT": store.endpoint}
    topic = new_topic(2)
    data = make_spec(kafka_bootstrap=kafka_bootstrap, clickhouse=clickhouse_server, topics=[topic])
    data["source"]["max_records_per_batch"] = 500_000  # the backlog below in one micro-batch
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(data))
    table = data["sink"]["table"]
    checkpoint, log = f"s3a://{s3_store.bucket}/faults-{uuid.uuid4().hex[:8]}", tmp_path / "job.log"

    unique, first = 150_000, 10_000
    keys = [f"key-{i:06d}" for i in range(unique)]
    records = [(i % 2, event(k, n=i)) for i, k in enumerate(keys)]
    records += [((i + 1) % 2, event(keys[i * 7 % unique], n=-i)) for i in range(unique // 10)]
    records.sort(key=lambda r: abs(r[1]["n"]))  # repeats spread over time

    def count() -> int:
        if not ch.command(f"EXISTS TABLE `{table}`"):
            return 0
        return int(ch.query(f"SELECT count() FROM `{table}`").result_rows[0][0])

    def settled(seen: list[int]) -> bool:  # the count reached the keys and stayed for 5 polls (a double would show)
        seen.append(count())
        return len(seen) > 5 and seen[-1] >= unique and len(set(seen[-5:])) == 1

    produce(kafka_bootstrap, topic, records[:first])
    job = start_job(spec_file, checkpoint, log, env)
    try:
        # A first batch committed with its state on S3, then a clean stop, and a backlog waiting.
        prefix = checkpoint.removeprefix(f"s3a://{s3_store.bucket}/")
        committed = f"{prefix}/commits/0"  # the first micro-batch's commit (not the folder's marker)
        wait_for(lambda: committed in s3_store.keys(committed) or job.poll() is not None, timeout=JOB_TIMEOUT)
        assert job.poll() is None, log.read_text()[-3000:]
        job.send_signal(signal.SIGTERM)  # the runner alone, as a stop: it ends between two micro-batches
        assert job.wait(timeout=JOB_TIMEOUT) == 0
        produce(kafka_bootstrap, topic, records[first:])
        # Every write of the state's changelog refused: the backlog's batch (some 80,000 rows a partition) fails as
        # its partitions commit.
        store.refuse_writes(".changelog")
        job = start_job(spec_file, checkpoint, log, env)
        try:
            wait_for(lambda: job.poll() is not None, timeout=JOB_TIMEOUT)
        except AssertionError:
            raise AssertionError(f"the job did not fail; writes seen: {store.writes[-40:]}") from None
        assert job.returncode != 0 and store.refused > 0
        assert "Status Code: 500" in log.read_text()
        store.heal()
        job = start_job(spec_file, checkpoint, log, env)
        seen: list[int] = []
        wait_for(lambda: settled(seen) or job.poll() is not None, timeout=2 * JOB_TIMEOUT, interval=1)
        assert job.poll() is None, log.read_text()[-3000:]
        rows, distinct = ch.query(f"SELECT count(), uniqExact(event_id) FROM `{table}`").result_rows[0]
        assert (rows, distinct) == (unique, unique)
    finally:
        if job.poll() is None:
            job.terminate()
            job.wait(timeout=120)
        store.stop()
