"""A pipeline whose checkpoint is on object storage (a real S3 API: S3Proxy), through the API with a real worker."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest
from django.test import Client

from spark_jobs.checkpoint_offsets import committed_offsets_on_s3
from spark_jobs.s3_client import S3Client
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
from tests.worker.test_pipeline_runs import active_run, exactly, kill_job
from webapp.pipelines.models import PipelineRun

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]
# Each job here starts with the AWS SDK on its class path and its checkpoint over HTTP: on a busy machine its first
# batch came after more than JOB_TIMEOUT (on a quiet one, well within it).
TIMEOUT = 2 * JOB_TIMEOUT


def test_a_checkpoint_on_s3_survives_a_sigkill_mid_load_and_a_bucket_it_cannot_write_fails_in_words(
    api, kafka_conn, ch_conn, kafka_bootstrap, topic, ch, celery_worker, worker_env, s3_store, settings, tmp_path, owner
):
    root = f"s3a://{s3_store.bucket}/checkpoints-{uuid.uuid4().hex[:8]}"
    # No re-size on a slow start (it would restart the job too, before the kill).
    worker_env.update(s3_store.env(), CLEARFLOW_CHECKPOINT_ROOT=root, CLEARFLOW_RESIZE_SETTLE="3600")
    settings.CLEARFLOW_CHECKPOINT_ROOT = root
    table = f"s3_{uuid.uuid4().hex[:8]}"
    unique = 12_000
    records = events("s", unique, unique // 10)
    records.sort(key=lambda r: abs(r[1]["n"]))  # repeats spread over time
    celery_worker.start()
    spec = api_spec(topic, table)
    spec["source"]["max_records_per_batch"] = 2_000
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=spec)
    api.post(f"{URL}{pk}/deploy/")
    wait_status(api, pk, "running", timeout=TIMEOUT, worker=celery_worker)
    loader = threading.Thread(
        target=lambda: [produce(kafka_bootstrap, topic, records[i : i + 2_000]) for i in range(0, len(records), 2_000)]
    )
    loader.start()
    try:
        wait_for(lambda: table_counts(ch, table)[0] > 0, timeout=TIMEOUT)
        crashed = active_run(api, pk)
        kill_job(crashed["pid"])  # the job's whole process group, mid-load

        def restarted() -> dict | None:
            return next((r for r in api.get(f"{URL}{pk}/runs/").json() if r["attempt"] == 2 and r["running_at"]), None)

        second = wait_for(restarted, timeout=TIMEOUT, interval=0.5)
    finally:
        loader.join(timeout=300)
    checkpoint = PipelineRun.objects.get(pk=second["id"]).checkpoint
    assert checkpoint.startswith(f"{root}/")
    wait_for(lambda: table_counts(ch, table)[0] >= unique, timeout=TIMEOUT)
    assert exactly(ch, table, unique)

    # Offsets, commits and the dedup state are all on S3, nothing on the worker's disk.
    prefix = checkpoint.removeprefix(f"s3a://{s3_store.bucket}/") + "/"
    names = {key.removeprefix(prefix).split("/")[0] for key in s3_store.keys(prefix)}
    assert {"offsets", "commits", "state"} <= names, names
    assert not (tmp_path / "checkpoints").exists() and not Path(settings.CLEARFLOW_CHECKPOINT_ROOT).exists()
    # The lag reader reads where the pipeline stands from the checkpoint on S3: every record, once the last commit
    # is written.
    client = S3Client.from_env(s3_store.env())

    def committed() -> int:
        offsets = committed_offsets_on_s3(checkpoint, client) or {}
        return sum(offsets.get(topic, {}).values())

    wait_for(lambda: committed() == len(records), timeout=60)

    # Deleting the pipeline with its checkpoint removes the checkpoint's objects.
    assert api.delete(f"{URL}{pk}/?remove_checkpoint=true").status_code == 204
    wait_for(lambda: not s3_store.keys(prefix), timeout=60)

    # Keys that S3 refuses: the job fails, and the page and the API say so in words.
    celery_worker.stop()
    worker_env.update(s3_store.env(secret_key="not-the-key"))
    celery_worker.start()
    refused = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, f"{table}_denied"))
    api.post(f"{URL}{refused}/deploy/")

    def failed_run() -> dict | None:
        return next((r for r in api.get(f"{URL}{refused}/runs/").json() if r["outcome"] == "failed"), None)

    run = wait_for(failed_run, timeout=TIMEOUT)
    words = f"S3: access denied to bucket {s3_store.bucket}"
    assert run["cause"] == "checkpoint_store_denied" and words in run["reason"], run
    browser = Client()
    browser.force_login(owner)
    assert words in browser.get(f"/pipelines/{refused}/run-state/").content.decode()
