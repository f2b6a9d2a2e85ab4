"""Members through the API and the pages, the last admin kept, the activity log (with secrets masked), sign-ins,
the header's switcher, and the 403 page a member gets for what their role does not allow."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.activity.models import ActivityEntry
from webapp.activity.services import MASK, activity_prune
from webapp.connections.services import kafka_connection_create
from webapp.workspaces.models import Membership, Workspace
from webapp.workspaces.services import member_add, workspace_create, workspace_for_new_objects

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    User = get_user_model()
    return {
        name: User.objects.create_user(name, email=f"{name}@example.com", password=f"{name}-pass-123")
        for name in ("ann", "ben", "cat")
    }


def api_as(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_an_admin_adds_changes_and_removes_members_and_the_last_admin_stays(people):
    ann = api_as(people["ann"])
    created = ann.post("/api/v1/workspaces/", {"name": "Data team"}, format="json")
    assert created.status_code == 201 and created.json()["role"] == "admin"
    workspace = created.json()["id"]
    members = f"/api/v1/workspaces/{workspace}/members/"

    added = ann.post(members, {"username": "ben@example.com", "role": "viewer"}, format="json")
    assert added.status_code == 201 and added.json()["username"] == "ben"
    again = ann.post(members, {"username": "ben", "role": "editor"}, format="json")
    assert again.status_code == 409
    unknown = ann.post(members, {"username": "nobody", "role": "editor"}, format="json")
    assert unknown.status_code == 400 and "no active user" in unknown.json()["message"]
    ben = added.json()["id"]
    assert ann.patch(f"{members}{ben}/", {"role": "editor"}, format="json").json()["role"] == "editor"
    assert {m["username"]: m["role"] for m in ann.get(members).json()} == {"ann": "admin", "ben": "editor"}

    # ben, an editor, may not manage members: 403 in words; cat, an outsider, gets 404.
    refused = api_as(people["ben"]).post(members, {"username": "cat", "role": "admin"}, format="json")
    assert refused.status_code == 403 and "admin role" in refused.json()["message"]
    assert api_as(people["cat"]).get(members).status_code == 404

    ann_id = Membership.objects.get(workspace_id=workspace, user=people["ann"]).pk
    last = ann.delete(f"{members}{ann_id}/")
    assert last.status_code == 409 and "last admin" in last.json()["message"]
    demoted = ann.patch(f"{members}{ann_id}/", {"role": "viewer"}, format="json")
    assert demoted.status_code == 409
    assert Membership.objects.get(pk=ann_id).role == "admin"
    assert ann.delete(f"{members}{ben}/").status_code == 204

    actions = list(
        ActivityEntry.objects.filter(workspace_id=workspace).order_by("id").values_list("action", "actor_name")
    )
    assert actions == [
        ("workspace.create", "ann"),
        ("member.add", "ann"),
        ("member.role_change", "ann"),
        ("member.remove", "ann"),
    ]


def test_objects_carry_their_workspace_and_lists_take_one(people, kafka_bootstrap):
    ann = people["ann"]
    default = workspace_for_new_objects(user=ann)  # her own, the first she is in
    team = workspace_create(user=ann, name="Team")
    api = api_as(ann)
    own = api.post("/api/v1/connections/kafka/", {"name": "k", "bootstrap_servers": kafka_bootstrap}, format="json")
    in_team = api.post(
        "/api/v1/connections/kafka/",
        {"name": "k", "bootstrap_servers": kafka_bootstrap, "workspace": team.pk},
        format="json",
    )
    assert own.status_code == in_team.status_code == 201  # the same name, once per workspace
    assert own.json()["workspace"] == default.pk != team.pk and in_team.json()["workspace"] == team.pk
    listed = api.get(f"/api/v1/connections/kafka/?workspace={team.pk}").json()
    assert [c["id"] for c in listed] == [in_team.json()["id"]]
    assert len(api.get("/api/v1/connections/kafka/").json()) == 2
    taken = api.post(
        "/api/v1/connections/kafka/",
        {"name": "k", "bootstrap_servers": kafka_bootstrap, "workspace": team.pk},
        format="json",
    )
    assert taken.status_code == 400 and "already has a connection named" in taken.json()["message"]


def test_the_activity_log_says_who_changed_what_and_never_shows_a_secret(people, kafka_bootstrap):
    ann = people["ann"]
    connection = kafka_connection_create(
        owner=ann,
        data={
            "name": "secure",
            "bootstrap_servers": kafka_bootstrap,
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_username": "u",
            "sasl_password": "first-secret",
        },
    )
    api = api_as(ann)
    response = api.patch(
        f"/api/v1/connections/kafka/{connection.pk}/",
        {"sasl_password": "second-secret", "sasl_username": "v"},
        format="json",
    )
    assert response.status_code == 200
    entries = api.get("/api/v1/activity/?action=connection.").json()
    assert [e["action"] for e in entries] == ["connection.edit", "connection.secret", "connection.create"]
    text = str(entries)
    assert "first-secret" not in text and "second-secret" not in text
    create = entries[-1]
    assert create["after"]["sasl_password"] == MASK and create["actor_name"] == "ann"
    assert entries[0]["before"] == {"sasl_username": "u"} and entries[0]["after"] == {"sasl_username": "v"}
    assert entries[1]["after"]["sasl_password"].startswith(MASK)
    # Another workspace's member sees none of it.
    assert api_as(people["cat"]).get("/api/v1/activity/").json() == []


def test_sign_ins_and_failed_ones_are_recorded_and_old_entries_pruned(client, people, settings):
    assert client.post("/login/", {"username": "ann", "password": "wrong"}).status_code == 200
    assert client.post("/login/", {"username": "ann", "password": "ann-pass-123"}).status_code == 302
    entries = list(ActivityEntry.objects.filter(actor=people["ann"]).values_list("action", flat=True))
    assert sorted(entries) == ["sign_in", "sign_in.failed"]
    assert [e["action"] for e in api_as(people["ann"]).get("/api/v1/activity/").json()][:2] == [
        "sign_in",
        "sign_in.failed",
    ]
    settings.ACTIVITY_RETENTION_DAYS = 30
    ActivityEntry.objects.filter(action="sign_in.failed").update(at=timezone.now() - timedelta(days=31))
    assert activity_prune() == 1
    assert list(ActivityEntry.objects.values_list("action", flat=True)) == ["sign_in"]


def test_the_header_switches_workspaces_and_a_viewer_gets_the_403_page(client, people):
    ann, ben = people["ann"], people["ben"]
    workspace_for_new_objects(user=ben)  # his own comes first
    team = workspace_create(user=ann, name="Data team")
    member_add(workspace=team, actor=ann, username="ben", role="viewer")
    client.force_login(ben)
    page = html.unescape(client.get("/connections/").content.decode())
    assert "ben's workspace" in page and "Data team" in page  # current, and the other one to switch to
    switched = client.post(f"/workspaces/{team.pk}/switch/", {"next": "/connections/"})
    assert switched.status_code == 302
    page = client.get("/connections/").content.decode()
    assert re.search(r'<strong id="current-workspace"[^>]*>Data team</strong>', page)

    refused = client.post("/connections/kafka/new/", {"name": "x", "bootstrap_servers": "kafka:9092"})
    assert refused.status_code == 403
    text = refused.content.decode()
    assert "Not allowed" in text and "takes the editor role" in text and 'id="topbar"' in text
    members = client.get(f"/workspaces/{team.pk}/members/").content.decode()
    assert "ann" in members and "Add a member" not in members
    assert client.post(f"/workspaces/{team.pk}/members/", {"action": "add", "username": "cat"}).status_code == 403
    elsewhere = Workspace.objects.get(memberships__user=people["cat"]) if people["cat"].memberships.exists() else None
    assert elsewhere is None
    cat_space = workspace_create(user=people["cat"], name="cat's")
    assert client.get(f"/workspaces/{cat_space.pk}/members/").status_code == 404
    assert client.post(f"/workspaces/{cat_space.pk}/switch/").status_code == 404


def test_an_admin_manages_members_on_the_members_page(client, people):
    ann = people["ann"]
    team = workspace_create(user=ann, name="Data team")
    client.force_login(ann)
    url = f"/workspaces/{team.pk}/members/"
    assert client.post(url, {"action": "add", "username": "cat@example.com", "role": "editor"}).status_code == 302
    cat = Membership.objects.get(workspace=team, user=people["cat"])
    assert cat.role == "editor"
    client.post(url, {"action": "role", "member": cat.pk, "role": "admin"})
    assert Membership.objects.get(pk=cat.pk).role == "admin"
    client.post(url, {"action": "remove", "member": cat.pk})
    assert not Membership.objects.filter(pk=cat.pk).exists()
    client.post(url, {"action": "settings", "hide_dead_letter_payloads": "on"})
    assert Workspace.objects.get(pk=team.pk).hide_dead_letter_payloads
    mine = Membership.objects.get(workspace=team, user=ann)
    page = client.post(url, {"action": "remove", "member": mine.pk}, follow=True).content.decode()
    assert "last admin" in page and Membership.objects.filter(pk=mine.pk).exists()
