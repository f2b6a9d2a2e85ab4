"""Logins are throttled (UI and admin), API tokens are stored hashed, shown once, listed and revoked."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from webapp.api.models import ApiToken

TOKENS = "/api/v1/tokens/"


@pytest.mark.parametrize("login_url", ["/login/", "/admin/login/"])
def test_repeated_wrong_passwords_lock_the_login_and_are_logged(client, db, caplog, login_url):
    get_user_model().objects.create_superuser("alice", "a@example.com", "right-pass-123")
    caplog.set_level(logging.INFO)
    for _ in range(30):
        client.post(login_url, {"username": "alice", "password": "wrong"})
    response = client.post(login_url, {"username": "alice", "password": "right-pass-123"})

    assert "_auth_user_id" not in client.session
    assert response.status_code in (403, 429)
    failures = [r for r in caplog.records if "login failure" in r.getMessage().lower()]
    assert failures and "alice" in failures[0].getMessage()


def test_a_few_wrong_passwords_then_the_right_one_logs_in(client, owner):
    for _ in range(2):
        client.post("/login/", {"username": "owner", "password": "wrong"})
    client.post("/login/", {"username": "owner", "password": "owner-pass-123"})
    assert "_auth_user_id" in client.session


def test_api_is_throttled_per_user(api, settings):
    from rest_framework.throttling import UserRateThrottle

    UserRateThrottle.THROTTLE_RATES = {**UserRateThrottle.THROTTLE_RATES, "user": "3/min"}
    try:
        codes = [api.get(TOKENS).status_code for _ in range(5)]
    finally:
        UserRateThrottle.THROTTLE_RATES = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]


def test_tokens_are_hashed_shown_once_listed_used_and_revoked(client, owner, other):
    client.force_login(owner)
    session_api = APIClient()
    session_api.force_authenticate(owner)
    created = session_api.post(TOKENS, {"name": "deploy script"}, format="json")
    assert created.status_code == 201
    text = created.json()["token"]

    stored = ApiToken.objects.get(pk=created.json()["id"])
    assert text not in {stored.digest, stored.token_key} and stored.digest != text
    assert not ApiToken.objects.filter(digest=text).exists()

    token_api = APIClient()
    token_api.credentials(HTTP_AUTHORIZATION=f"Token {text}")
    listed = token_api.get(TOKENS)
    assert listed.status_code == 200
    assert [t["name"] for t in listed.json()] == ["deploy script"]
    assert "token" not in listed.json()[0] and text not in listed.content.decode()
    assert listed.json()[0]["last_used"] is not None

    other_api = APIClient()
    other_api.force_authenticate(other)
    assert other_api.get(TOKENS).json() == []
    assert other_api.delete(f"{TOKENS}{stored.pk}/").status_code == 404

    assert token_api.delete(f"{TOKENS}{stored.pk}/").status_code == 204
    assert token_api.get(TOKENS).status_code == 401


def test_token_page_creates_shows_once_and_revokes(client, owner):
    client.force_login(owner)
    page = client.post("/account/tokens/", {"action": "create", "name": "laptop"})
    token = ApiToken.objects.get(user=owner)
    html = page.content.decode()
    assert 'id="new-token-value"' in html and "laptop" in html
    again = client.get("/account/tokens/").content.decode()
    assert "laptop" in again and 'id="new-token-value"' not in again

    client.post("/account/tokens/", {"action": "revoke", "token": token.pk})
    assert not ApiToken.objects.filter(pk=token.pk).exists()


def test_admin_shows_no_token_secrets(client, db, owner):
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123")
    client.force_login(admin)
    from webapp.api.tokens import api_token_create

    token, text = api_token_create(user=owner, name="ci")
    for url in ("/admin/api/apitoken/", f"/admin/api/apitoken/{token.pk}/change/"):
        html = client.get(url).content.decode()
        assert "ci" in html
        assert token.digest not in html and text not in html and token.token_key not in html
    assert client.get("/admin/knox/authtoken/").status_code == 404


def test_the_command_prints_a_working_token(owner):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_api_token", "owner", "--name", "cli", stdout=out)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {out.getvalue().strip()}")
    assert client.get(TOKENS).json()[0]["name"] == "cli"
