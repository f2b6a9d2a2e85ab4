"""A database from before workspaces, with two owners' objects in it, migrated: each owner's objects move into a
workspace of their own with the owner as its admin, nothing is lost, and the running pipeline keeps its id (so
its job's name, metrics key and ClickHouse insert tokens stay the same)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from webapp.alerts.models import AlertChannel
from webapp.api.models import ApiToken
from webapp.audits.models import AuditedTable
from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.pipelines.models import Pipeline
from webapp.workspaces.models import Membership, Workspace

BEFORE = [
    ("connections", "0005_host_checks_end_at_the_end"),
    ("pipelines", "0008_run_sizing_and_resize"),
    ("alerts", "0003_behind_rule_for_existing_pipelines"),
    ("audits", "0001_initial"),
    ("api", "0002_token_read_only"),
    ("workspaces", None),
]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state([target for target in targets if target[1] is not None]).apps


@pytest.mark.django_db(transaction=True)
def test_each_owners_objects_move_into_a_workspace_of_their_own():
    old = migrate(BEFORE)
    User = old.get_model("auth", "User")
    alice, bob = User.objects.create(username="alice"), User.objects.create(username="bob")
    made = {}
    for user in (alice, bob):
        # The same names for both: unique per owner before, per workspace after.
        kafka = old.get_model("connections", "KafkaConnection").objects.create(
            owner=user, name="events", bootstrap_servers="kafka:9092"
        )
        clickhouse = old.get_model("connections", "ClickHouseConnection").objects.create(
            owner=user, name="warehouse", host="clickhouse", port=8123
        )
        pipeline = old.get_model("pipelines", "Pipeline").objects.create(
            owner=user, name="orders", kafka_connection=kafka, clickhouse_connection=clickhouse, status="running"
        )
        channel = old.get_model("alerts", "AlertChannel").objects.create(
            owner=user, name="ops", kind="email", email_to="ops@example.com"
        )
        audited = old.get_model("audits", "AuditedTable").objects.create(
            owner=user,
            connection=clickhouse,
            database="default",
            table="orders",
            key_columns=["id"],
            time_column="ts",
        )
        token = old.get_model("api", "ApiToken").objects.create(
            user=user, name="ci", digest=f"{user.username:x<128}", token_key=user.username[:8]
        )
        made[user.username] = {
            KafkaConnection: kafka.pk,
            ClickHouseConnection: clickhouse.pk,
            Pipeline: pipeline.pk,
            AlertChannel: channel.pk,
            AuditedTable: audited.pk,
            ApiToken: token.pk,
        }

    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert Workspace.objects.count() == 2
    for username, objects in made.items():
        membership = Membership.objects.get(user__username=username)
        assert membership.role == "admin"
        assert membership.workspace.name == f"{username}'s workspace"
        for model, pk in objects.items():
            assert model.objects.get(pk=pk).workspace_id == membership.workspace_id, (username, model)
        pipeline = Pipeline.objects.get(pk=objects[Pipeline])
        assert (pipeline.name, pipeline.status) == ("orders", "running")
        assert pipeline.job_name == f"pipeline-{objects[Pipeline]}"
    assert Pipeline.objects.filter(name="orders").count() == 2
