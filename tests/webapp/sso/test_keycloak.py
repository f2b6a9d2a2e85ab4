"""Single sign-on against a real Keycloak (localstack.keycloak): the sign-in through the provider's own login
form, the group -> workspace role mapping, and the provider's access tokens on the API."""

from __future__ import annotations

import base64
import html
import json
import re
import time
from typing import Any
from urllib.parse import urljoin

import pytest
import requests
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from localstack.keycloak import Keycloak, OidcClient
from tests.webapp.conftest import BRIEF_CLIENT
from webapp.activity.models import ActivityEntry
from webapp.sso.authentication import CLOCK_SKEW_SECONDS
from webapp.workspaces.models import Membership


def roles_of(username: str) -> dict[str, str]:
    memberships = Membership.objects.filter(user__username=username).select_related("workspace")
    return {membership.workspace.name: membership.role for membership in memberships}


def follow(browser: requests.Session, method: str, url: str, **kwargs: Any) -> requests.Response:
    """One request and its redirects, as a browser follows them. Keycloak marks its cookies Secure; a browser
    sends those to a loopback address over plain HTTP (a secure context), requests does not: the jar is told
    so after each answer."""
    while True:
        answer = browser.request(method, url, allow_redirects=False, timeout=60, **kwargs)
        for cookie in browser.cookies:
            cookie.secure = False
        if not answer.is_redirect:
            return answer
        method, url, kwargs = "GET", urljoin(answer.url, answer.headers["Location"]), {}


def sign_in(base_url: str, keycloak: Keycloak, username: str) -> requests.Response:
    """What a browser does: the login page's button, Keycloak's login form, back to ClearFlow."""
    browser = requests.Session()
    login_page = follow(browser, "GET", f"{base_url}/login/")
    assert "Sign in with Keycloak" in login_page.text
    button = re.search(r'href="([^"]*/oidc/authenticate/[^"]*)"', login_page.text)
    assert button is not None
    form_page = follow(browser, "GET", f"{base_url}{html.unescape(button.group(1))}")
    assert form_page.url.startswith(keycloak.authorization_url), form_page.url
    action = re.search(r'<form[^>]*id="kc-form-login"[^>]*action="([^"]+)"', form_page.text)
    assert action is not None, form_page.text[:2000]
    return follow(
        browser,
        "POST",
        html.unescape(action.group(1)),
        data={"username": username, "password": keycloak.users[username], "credentialId": ""},
    )


@pytest.mark.django_db(transaction=True)
def test_a_user_signs_in_through_keycloak_and_lands_with_the_role_their_groups_map_to(sso: Keycloak, live_server):
    landed = sign_in(live_server.url, sso, "ann")
    assert landed.status_code == 200
    assert landed.url == f"{live_server.url}/", landed.url
    assert "ann" in landed.text  # the header's user menu: signed in
    assert roles_of("ann") == {"Data team": "admin"}
    ann = get_user_model().objects.get(username="ann")
    assert ann.email == "ann@example.com" and not ann.has_usable_password()
    signed_in = ActivityEntry.objects.filter(actor=ann, action="sign_in")
    assert signed_in.count() == 1
    added = ActivityEntry.objects.get(action="member.add", object_name="ann")
    assert added.after == {"role": "admin", "by": "single sign-on"}

    sign_in(live_server.url, sso, "bob")
    assert roles_of("bob") == {"Data team": "viewer", "Reports": "editor"}
    # carol is in no mapped group: a member of no mapped workspace (she gets her own on first use)
    carol = sign_in(live_server.url, sso, "carol")
    assert carol.url == f"{live_server.url}/"
    assert not {"Data team", "Reports"} & set(roles_of("carol"))
    # a second sign-in finds the same user again, by the provider's subject
    sign_in(live_server.url, sso, "ann")
    assert get_user_model().objects.filter(username__startswith="ann").count() == 1


def jwt_payload(token: str) -> dict:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


@pytest.mark.django_db
def test_the_providers_access_tokens_are_taken_on_the_api_and_a_bad_or_expired_one_is_401(sso: Keycloak):
    api = APIClient()
    machine = sso.client_credentials_token()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {machine}")
    me = api.get("/api/v1/me/")
    assert me.status_code == 200, me.content
    assert me.json()["username"] == "service-account-clearflow-machine"
    workspaces = {item["name"]: item["role"] for item in api.get("/api/v1/workspaces/").json()}
    assert workspaces == {"Data team": "viewer", "Reports": "editor"}
    # an editor of Reports creates there; a viewer of Data team is refused in words
    ids = {item["name"]: item["id"] for item in api.get("/api/v1/workspaces/").json()}
    refused = api.patch(f"/api/v1/workspaces/{ids['Data team']}/", {"name": "Mine"}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"

    tampered = machine[:-4] + ("AAAA" if not machine.endswith("AAAA") else "BBBB")
    for token, words in ((tampered, "not a valid token"), ("not-a-token.at.all", "not a valid token")):
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        answer = api.get("/api/v1/me/")
        assert answer.status_code == 401, answer.content
        assert answer["Content-Type"].startswith("application/json")
        assert words in answer.json()["message"]

    brief = sso.client_credentials_token(OidcClient(BRIEF_CLIENT, "brief-client-secret"))
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {brief}")
    assert api.get("/api/v1/me/").status_code == 200
    time.sleep(max(0.0, jwt_payload(brief)["exp"] + CLOCK_SKEW_SECONDS + 1 - time.time()))
    expired = api.get("/api/v1/me/")
    assert expired.status_code == 401
    assert "it has expired" in expired.json()["message"]
