"""Dead letters made by the real engine (Spark, in-process) from malformed events, seen through the API, and
replayed: they go back into the topic, through parsing and dedup again, and (still malformed) come back as new
dead letters under their new offsets while the good rows stay written once."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from spark_jobs.query import start_query, stop_query
from spark_jobs.session import build_session
from tests.webapp.conftest import order, orders_spec, produce_records
from webapp.pipelines import services

pytestmark = [pytest.mark.spark, pytest.mark.django_db]

MALFORMED = [b"not json", json.dumps({**order(90), "order_id": "not-a-uuid"}).encode(), b'{"seq": 5}']


@pytest.fixture(scope="module")
def spark():
    logging.getLogger("py4j").setLevel(logging.WARNING)
    session = build_session(
        app_name="clearflow-dead-letter-tests",
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"},
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def run_job(spark, pipeline, checkpoint) -> None:
    """The job over everything in the topic so far (availableNow), from the pipeline's own job spec."""
    spec = services.pipeline_job_spec(pipeline=pipeline)
    query = start_query(spark, spec, checkpoint=str(checkpoint), trigger={"availableNow": True})
    try:
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        stop_query(spark, query)


def test_engine_dead_letters_browse_download_and_replay(
    spark, api, owner, kafka_conn, ch_conn, kafka_bootstrap, clickhouse_server, tmp_path
):
    import clickhouse_connect

    topic = f"orders_dl_{uuid.uuid4().hex[:8]}"
    good = [json.dumps(order(i)).encode() for i in range(3)]
    produce_records(kafka_bootstrap, topic, [*good, *MALFORMED])  # offsets 0-2 good, 3-5 malformed
    database = f"cf_dl_{uuid.uuid4().hex[:6]}"
    ch = clickhouse_connect.get_client(host=clickhouse_server.host, port=clickhouse_server.port)
    ch.command(f"CREATE DATABASE `{database}`")
    pipeline = services.pipeline_create(
        owner=owner,
        name="engine-dead-letters",
        kafka_connection=kafka_conn,
        clickhouse_connection=ch_conn,
        spec=orders_spec(topic, database, create_table=True),
    )
    base = f"/api/v1/pipelines/{pipeline.pk}/dead-letters/"

    run_job(spark, pipeline, tmp_path / "ckpt")
    page = api.get(base).json()
    assert page["count"] == 3
    assert sorted(r["offset"] for r in page["results"]) == [3, 4, 5]
    by_offset = {r["offset"]: r for r in page["results"]}
    assert by_offset[3]["raw"] == "not json" and by_offset[3]["reason"] == "invalid JSON"
    assert "order_id" in by_offset[5]["reason"]
    assert all(r["topic"] == topic and r["partition"] == 0 for r in page["results"])
    lines = b"".join(api.get(f"{base}download/").streaming_content).decode().splitlines()
    assert sorted(json.loads(line)["raw"].encode() for line in lines) == sorted(MALFORMED)

    assert api.post(f"{base}replay/", {}, format="json").json() == {
        "replayed": 3,
        "failed": 0,
        "remaining": 0,
        "error": None,
    }
    run_job(spark, pipeline, tmp_path / "ckpt")  # the job reads the replayed events like any others
    again = api.get(base).json()
    assert sorted(r["offset"] for r in again["results"]) == [6, 7, 8]
    assert sorted(r["raw"].encode() for r in again["results"]) == sorted(MALFORMED)
    assert ch.command(f"SELECT count() FROM `{database}`.orders") == 3
    ch.close()
