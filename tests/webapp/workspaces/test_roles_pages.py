"""Every page, as a viewer of the workspace: each GET shows the workspace's objects or is refused, each POST that
would change something is refused with the 403 page that says which role it takes, and afterwards nothing has
changed. (Outsiders are walked the same way in tests/webapp/api/test_cross_user_access.py.)"""

from __future__ import annotations

import pytest

from tests.webapp.api.test_cross_user_access import ui_urls
from tests.webapp.workspaces.conftest import MARK
from webapp.alerts.models import AlertChannel
from webapp.connections.models import ClickHouseConnection, KafkaConnection
from webapp.pipelines.models import Pipeline
from webapp.workspaces.models import Membership

pytestmark = pytest.mark.django_db


def state(team: dict) -> dict:
    workspace = team["workspace"]
    return {
        "pipelines": list(Pipeline.objects.filter(workspace=workspace).values_list("name", "status")),
        "kafka": list(KafkaConnection.objects.filter(workspace=workspace).values_list("name", "bootstrap_servers")),
        "clickhouse": list(ClickHouseConnection.objects.filter(workspace=workspace).values_list("name", "host")),
        "channels": list(AlertChannel.objects.filter(workspace=workspace).values_list("name", "enabled")),
        "members": sorted(Membership.objects.filter(workspace=workspace).values_list("user__username", "role")),
    }


def test_a_viewer_reads_the_pages_and_changes_nothing(client, team):
    client.force_login(team["users"]["viewer"])
    client.post(f"/workspaces/{team['workspace'].pk}/switch/")
    before = state(team)
    ids = sorted({*team["ids"].values(), team["member"]})
    refused = walked = 0
    for url in ui_urls(ids):
        if url.startswith(("/logout/", "/login/")):
            continue  # the walk stays signed in
        for method in ("get", "post"):
            response = getattr(client, method)(url, {"confirm": "yes", "name": f"{MARK}-x", "action": "add"})
            walked += 1
            where = f"{method.upper()} {url}"
            assert response.status_code != 500, where
            if response.status_code == 403:
                refused += 1
                text = response.content.decode()
                assert "Not allowed" in text and "role" in text and 'id="topbar"' in text, where
    assert walked > 50 and refused >= 10
    assert state(team) == before
    pipeline = team["ids"]["/api/v1/pipelines/"]
    page = client.get(f"/pipelines/{pipeline}/").content.decode()
    assert f"{MARK}-p" in page and 'id="pipeline-activity"' in page and "pipeline.create" in page


def test_an_editor_is_refused_every_page_change_that_takes_an_admin_and_nothing_changes(client, team):
    client.force_login(team["users"]["editor"])
    client.post(f"/workspaces/{team['workspace'].pk}/switch/")
    before = state(team)
    workspace, member = team["workspace"].pk, team["member"]
    pipeline, kafka = team["ids"]["/api/v1/pipelines/"], team["ids"]["/api/v1/connections/kafka/"]
    admin_only = [
        (f"/workspaces/{workspace}/members/", {"action": "add", "username": "outsider-user", "role": "editor"}),
        (f"/workspaces/{workspace}/members/", {"action": "role", "member": member, "role": "admin"}),
        (f"/workspaces/{workspace}/members/", {"action": "remove", "membership": member}),
        (f"/workspaces/{workspace}/members/", {"action": "settings", "hide_dead_letter_payloads": "on"}),
        (f"/pipelines/{pipeline}/reset-checkpoint/", {"confirm": "yes"}),
        (f"/pipelines/{pipeline}/dead-letters/purge/", {"confirm": "yes"}),
        (f"/connections/kafka/{kafka}/", {"name": f"{MARK}-k", "change_sasl_password": "on", "sasl_password": "x"}),
    ]
    for url, data in admin_only:
        response = client.post(url, data)
        where = f"editor: POST {url} {data}"
        assert response.status_code == 403, f"{where}: {response.status_code}"
        text = response.content.decode()
        assert "Not allowed" in text and "admin" in text, where
    assert state(team) == before
