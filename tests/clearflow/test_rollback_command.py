"""`clearflow rollback NAME --to N` against the live server: a new version equal to N, deployed; refusals in words."""

from __future__ import annotations

import copy
import json

import pytest

from tests.webapp.conftest import orders_spec
from webapp.pipelines.models import Pipeline
from webapp.pipelines.services import pipeline_create, pipeline_update

pytestmark = pytest.mark.django_db(transaction=True)


def test_rollback_deploys_a_new_version_equal_to_n_and_says_so(
    cli, owner, kafka_conn, ch_conn, topics, clickhouse_target
):
    spec = orders_spec(topics.orders, clickhouse_target.database)
    connections = {"kafka_connection": kafka_conn, "clickhouse_connection": ch_conn}
    pipeline = pipeline_create(owner=owner, name="orders", spec=spec, **connections)
    changed = copy.deepcopy(spec)
    changed["dedup"]["window"] = "30m"
    pipeline_update(pipeline=pipeline, user=owner, spec=changed)

    missing = cli("rollback", "orders", "--to", "9")
    assert missing.returncode == 1
    assert "Pipeline 'orders' has no version 9; its versions are 1 to 2." in missing.stderr

    done = cli("rollback", "orders", "--to", "1", "-o", "json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["name"] == "orders" and status["status"] == "deploy_requested"
    assert status["current_version"] == status["deployed_version"] == 3
    pipeline = Pipeline.objects.get(pk=pipeline.pk)
    assert pipeline.current_version.stored_spec == pipeline.versions.get(number=1).stored_spec
    assert cli("rollback", "nothing", "--to", "1").returncode == 4
