"""An unknown API URL answers in the API's JSON error shape; pages outside the API keep Django's HTML."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_an_unknown_api_url_is_a_json_404(client: Client) -> None:
    response = client.get("/api/v1/no-such-thing/")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "code": "not_found",
        "message": "No API operation at /api/v1/no-such-thing/; see /api/v1/docs/.",
        "errors": [{"path": "", "message": "No API operation at /api/v1/no-such-thing/; see /api/v1/docs/."}],
    }


def test_an_unknown_page_stays_html(admin_client: Client) -> None:
    response = admin_client.get("/no-such-page/")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
