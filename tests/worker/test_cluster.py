"""A real Spark standalone cluster (master and worker from the pyspark wheel, on loopback) runs a pipeline that
the Celery worker submits with spark-submit in client mode."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from localstack import processes
from tests.worker.helpers import JOB_TIMEOUT, URL, api_spec, create_pipeline, events, produce, table_counts, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]


def _workers_alive(ui_port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=1) as response:
            return json.load(response).get("aliveworkers", 0) > 0
    except OSError:
        return False


@pytest.fixture
def spark_cluster(tmp_path: Path) -> Iterator[str]:
    """`spark://127.0.0.1:PORT` of a master with one worker (1 core, 2 GiB)."""
    from worker.jobs import spark_home

    spark_class = str(Path(spark_home()) / "bin" / "spark-class")
    port, ui_port, worker_ui = processes.free_port(), processes.free_port(), processes.free_port()
    master_url = f"spark://127.0.0.1:{port}"
    with processes.ProcessGroup(tmp_path / "spark-logs") as group:
        group.start(
            processes.ServiceDef(
                name="spark-master",
                argv=[spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                      "--port", str(port), "--webui-port", str(ui_port)],
                ready=lambda: processes.tcp_open("127.0.0.1", port),
                env={"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": spark_home()},
                ready_timeout=120,
            )
        )  # fmt: skip
        group.start(
            processes.ServiceDef(
                name="spark-worker",
                argv=[spark_class, "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
                      "--webui-port", str(worker_ui), "--cores", "2", "--memory", "2g",
                      "--work-dir", str(tmp_path / "spark-work")],
                ready=lambda: _workers_alive(ui_port),
                env={"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": spark_home()},
                ready_timeout=120,
            )
        )  # fmt: skip
        yield master_url


def test_a_pipeline_runs_on_a_standalone_cluster(
    api,
    kafka_conn,
    ch_conn,
    kafka_bootstrap,
    topic,
    ch,
    celery_worker,
    worker_env,
    spark_cluster,
):
    table = f"cluster_{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, events("c", 3000, 300))
    worker_env["SPARK_MASTER"] = spark_cluster
    worker_env["CLEARFLOW_SPARK_CONF"] = "spark.ui.enabled=false spark.executor.memory=768m spark.cores.max=2"
    celery_worker.start()
    pk = create_pipeline(api, kafka_conn=kafka_conn, ch_conn=ch_conn, spec=api_spec(topic, table))
    api.post(f"{URL}{pk}/deploy/")

    def running_run() -> dict | None:
        status = api.get(f"{URL}{pk}/status/").json()
        assert status["status"] != "failed", status["status_message"]
        runs = api.get(f"{URL}{pk}/runs/").json()
        return runs[0] if status["status"] == "running" and runs else None

    run = wait_for(running_run, timeout=JOB_TIMEOUT, interval=0.5)
    assert run["spark_master"] == spark_cluster
    assert run["spark_app_id"].startswith("app-")  # a standalone cluster's application, not local-...
    wait_for(lambda: table_counts(ch, table)[0] >= 3000, timeout=JOB_TIMEOUT)
    assert table_counts(ch, table) == (3000, 3000)

    api.post(f"{URL}{pk}/stop/")
    wait_for(lambda: api.get(f"{URL}{pk}/status/").json()["status"] == "stopped", timeout=120, interval=0.5)
