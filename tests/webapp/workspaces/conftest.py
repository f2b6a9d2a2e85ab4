"""A team: a workspace with an admin, an editor and a viewer, an outsider in a workspace of their own, and one object
of each kind in the team's workspace (named with MARK, which must never show up for the outsider)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from webapp.alerts.services import alert_channel_create
from webapp.api.tokens import api_token_create
from webapp.audits.models import AuditedTable
from webapp.connections.services import clickhouse_connection_create, kafka_connection_create
from webapp.pipelines.services import pipeline_create
from webapp.workspaces.models import Membership
from webapp.workspaces.services import member_add, workspace_create

MARK = "zq-team-only"
RANK = {"viewer": 1, "editor": 2, "admin": 3}


@pytest.fixture
def team(kafka_bootstrap, clickhouse_server):
    User = get_user_model()
    users = {role: User.objects.create_user(f"{role}-user", email=f"{role}@example.com") for role in RANK}
    users["outsider"] = User.objects.create_user("outsider-user")
    workspace = workspace_create(user=users["admin"], name=f"{MARK}-ws")
    for role in ("viewer", "editor"):
        member_add(workspace=workspace, actor=users["admin"], username=f"{role}-user", role=role)
    workspace_create(user=users["outsider"], name="elsewhere")
    admin = users["admin"]
    kafka = kafka_connection_create(
        owner=admin, workspace=workspace, data={"name": f"{MARK}-k", "bootstrap_servers": kafka_bootstrap}
    )
    clickhouse = clickhouse_connection_create(
        owner=admin,
        workspace=workspace,
        data={"name": f"{MARK}-c", "host": clickhouse_server.host, "port": clickhouse_server.port},
    )
    pipeline = pipeline_create(
        owner=admin,
        workspace=workspace,
        name=f"{MARK}-p",
        kafka_connection=kafka,
        clickhouse_connection=clickhouse,
        spec={
            "source": {"topics": ["t"], "fields": [{"path": "a", "type": "string"}]},
            "sink": {
                "clickhouse": {"database": "default"},
                "table": "t",
                "columns": [{"field": "a", "column": "a", "type": "String"}],
            },
        },
    )
    channel = alert_channel_create(
        owner=admin, workspace=workspace, data={"name": f"{MARK}-a", "kind": "email", "email_to": "ops@example.com"}
    )
    audited = AuditedTable.objects.create(
        owner=admin,
        workspace=workspace,
        connection=clickhouse,
        database="default",
        table="t",
        key_columns=["a"],
        time_column="ts",
    )
    token, _ = api_token_create(user=admin, name=f"{MARK}-t", workspace=workspace)
    ids = {
        "/api/v1/connections/kafka/": kafka.pk,
        "/api/v1/connections/clickhouse/": clickhouse.pk,
        "/api/v1/pipelines/": pipeline.pk,
        "/api/v1/alerts/channels/": channel.pk,
        "/api/v1/audits/": audited.pk,
        "/api/v1/tokens/": token.pk,
        "/api/v1/workspaces/": workspace.pk,
    }
    viewer_membership = Membership.objects.get(workspace=workspace, user=users["viewer"])
    return {
        "users": users,
        "workspace": workspace,
        "ids": ids,
        "member": viewer_membership.pk,
        "kafka": kafka,
        "clickhouse": clickhouse,
    }
