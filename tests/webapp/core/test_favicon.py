"""Every page has ClearFlow's icon, served by the app itself (the CSP allows only our own origin's images)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def static_files_from_the_source(settings) -> None:
    """WhiteNoise serves frontend/ as `make up` does after collectstatic (here straight from the finders)."""
    settings.WHITENOISE_USE_FINDERS = True
    settings.WHITENOISE_AUTOREFRESH = True


ICON_LINK = re.compile(r'<link rel="icon" href="(?P<href>[^"]+)" type="image/svg\+xml">')


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _icon_of(page: str, client: Client) -> bytes:
    match = ICON_LINK.search(page)
    assert match, "no <link rel=icon>"
    response = client.get(match["href"])
    assert response.status_code == 200
    assert response["Content-Type"].startswith("image/svg+xml")
    return _body(response)


def test_the_app_pages_and_the_admin_link_the_icon(client: Client) -> None:
    login_page = client.get("/login/").content.decode()
    icon = _icon_of(login_page, client)
    assert icon.startswith(b"<svg")

    admin = get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123")
    client.force_login(admin)
    assert _icon_of(client.get("/").content.decode(), client) == icon
    assert _icon_of(client.get("/admin/").content.decode(), client) == icon


def test_the_csp_lets_the_icon_load(client: Client) -> None:
    policy = client.get("/login/")["Content-Security-Policy"]
    img_src = next(part for part in policy.split(";") if part.strip().startswith("img-src")).split()[1:]
    assert "'self'" in img_src  # the icon is served from our own origin


def test_browsers_asking_for_favicon_ico_get_the_icon(client: Client) -> None:
    response = client.get("/favicon.ico", follow=True)
    assert response.status_code == 200
    assert _body(response).startswith(b"<svg")
