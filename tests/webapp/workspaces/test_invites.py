"""Invites: an admin makes a one-time link (the API and the members page), a new user signs up through it into
the workspace with its role; the link expires, works once, is shown once, and both steps are in the activity log."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.activity.models import ActivityEntry
from webapp.workspaces.models import Invite, Membership
from webapp.workspaces.services import member_add, workspace_create

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-enough-pass-4821"


@pytest.fixture
def workspace():
    User = get_user_model()
    ann = User.objects.create_user("ann", password="ann-pass-123")
    User.objects.create_user("vic", password="vic-pass-123")
    team = workspace_create(user=ann, name="Data team")
    member_add(workspace=team, actor=ann, username="vic", role="viewer")
    return team


def api_as(username: str) -> APIClient:
    api = APIClient()
    api.force_authenticate(get_user_model().objects.get(username=username))
    return api


def join(link: str, username: str) -> object:
    return Client().post(link, {"username": username, "email": "", "password": PASSWORD, "password_again": PASSWORD})


def test_an_invite_from_the_api_lets_one_new_user_in_once_with_its_role(workspace):
    made = api_as("ann").post(
        f"/api/v1/workspaces/{workspace.pk}/invites/", {"role": "editor", "email": "dan@example.com"}, format="json"
    )
    assert made.status_code == 201, made.content
    link = made.json()["link"]
    assert re.fullmatch(r"http://testserver/invites/[\w-]{40,}/", link)
    secret = link.rstrip("/").rsplit("/", 1)[1]
    assert not Invite.objects.filter(digest=secret).exists()  # only its digest is kept
    listed = api_as("vic").get(f"/api/v1/workspaces/{workspace.pk}/invites/").json()
    assert [(item["email"], item["role"]) for item in listed] == [("dan@example.com", "editor")]
    assert "link" not in listed[0]
    refused = api_as("vic").post(f"/api/v1/workspaces/{workspace.pk}/invites/", {"role": "admin"}, format="json")
    assert refused.status_code == 403

    page = Client().get(link)
    assert page.status_code == 200 and "Join Data team" in page.content.decode()
    joined = join(link, "dan")
    assert joined.status_code == 302 and joined["Location"] == "/"
    dan = get_user_model().objects.get(username="dan")
    assert dan.check_password(PASSWORD) and dan.email == "dan@example.com"
    assert Membership.objects.get(workspace=workspace, user=dan).role == "editor"
    assert api_as("ann").get(f"/api/v1/workspaces/{workspace.pk}/invites/").json() == []

    again = join(link, "eve")
    assert again.status_code == 410
    assert "was used already" in html.unescape(again.content.decode())
    assert not get_user_model().objects.filter(username="eve").exists()
    actions = list(ActivityEntry.objects.filter(workspace=workspace).values_list("action", "actor_name"))
    assert ("invite.create", "ann") in actions and ("invite.accept", "dan") in actions
    assert ("member.add", "dan") in actions


def test_the_members_page_shows_the_link_once_and_an_expired_link_is_refused(workspace):
    admin = Client()
    admin.force_login(get_user_model().objects.get(username="ann"))
    answer = admin.post(f"/workspaces/{workspace.pk}/members/", {"action": "invite", "role": "viewer", "email": ""})
    text = html.unescape(answer.content.decode())
    link = re.search(r"<code>(http://testserver/invites/[\w-]+/)</code>", text)
    assert link is not None, text
    again = html.unescape(admin.get(f"/workspaces/{workspace.pk}/members/").content.decode())
    assert link.group(1) not in again and "anyone with the link" in again

    Invite.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = Client().get(link.group(1))
    assert expired.status_code == 410
    assert "has expired: ask the workspace's admin for a new one" in html.unescape(expired.content.decode())
    assert join(link.group(1), "fay").status_code == 410
    assert not get_user_model().objects.filter(username="fay").exists()
    # a weak password is refused in words, and the invite stays open
    Invite.objects.update(expires_at=timezone.now() + timedelta(days=1))
    weak = Client().post(link.group(1), {"username": "gil", "password": "123", "password_again": "123"})
    assert weak.status_code == 200 and "too short" in weak.content.decode()
    assert Invite.objects.get().used_at is None
