"""A page that is not there (404) or refused (403) is ClearFlow's page: the header, the reason in words and the way
back; an API path keeps its JSON error."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.webapp.conftest import orders_spec
from webapp.pipelines.models import Pipeline
from webapp.pipelines.services import pipeline_create
from webapp.wizard.services import draft_discard, draft_get_or_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def pipeline(owner, kafka_connection, clickhouse_connection):
    return pipeline_create(
        owner=owner,
        name="orders",
        kafka_connection=kafka_connection,
        clickhouse_connection=clickhouse_connection,
        spec=orders_spec("orders", "default"),
    )


def assert_error_page(response, status: int, reason: str) -> str:
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert 'id="topbar"' in html, "ClearFlow's header, with its menu"
    assert f'<p id="error-reason">{reason}</p>' in html
    assert f'href="{reverse("pipelines:list")}">Your pipelines</a>' in html
    return html


def test_someone_elses_pipeline_is_a_page_that_says_so(client, other, pipeline):
    client.force_login(other)
    response = client.get(reverse("pipelines:detail", kwargs={"pk": pipeline.pk}), HTTP_REFERER="http://testserver/")
    html = assert_error_page(
        response, 404, f"You have no pipeline {pipeline.pk}: it was deleted, or it belongs to another user."
    )
    assert '<a class="btn" href="http://testserver/" id="error-back">Back</a>' in html
    assert "orders" not in html.split('id="error-page"')[1], "nothing of the pipeline shows"


def test_a_used_draft_url_says_the_draft_is_gone(client, owner):
    client.force_login(owner)
    draft = draft_get_or_create(user=owner)
    url = reverse("wizard:step", kwargs={"draft_id": draft.pk, "step": "kafka"})
    assert client.get(url).status_code == 200
    draft_discard(draft=draft)  # as the review step does once the pipeline is saved
    response = client.get(url, HTTP_REFERER="https://elsewhere.example/")
    html = assert_error_page(
        response, 404, "This draft is gone: a draft ends once its pipeline is saved, or when it is discarded."
    )
    assert "elsewhere.example" not in html, "the way back stays on this site"


def test_an_unknown_page_names_its_path(client, owner):
    client.force_login(owner)
    assert_error_page(client.get("/no-such-page/"), 404, "There is no page at /no-such-page/.")


def test_an_unknown_page_asks_an_anonymous_visitor_to_log_in(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert 'href="/login/?next=/no-such-page/">Log in</a>' in response.content.decode()


def test_a_form_without_its_security_token_is_refused_in_words(owner, pipeline):
    Pipeline.objects.filter(pk=pipeline.pk).update(status="stopped")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    response = browser.post(reverse("pipelines:action", kwargs={"pk": pipeline.pk, "action": "deploy"}))
    html = assert_error_page(
        response,
        403,
        "It did not carry this session&#x27;s security token. That happens when the page was opened before you "
        "logged in again, or when the browser blocks cookies.",
    )
    assert "Nothing was changed. Go back, reload the page and send the form again." in html
    assert Pipeline.objects.get(pk=pipeline.pk).status == "stopped", "nothing was changed"


def test_api_paths_keep_their_json_errors(client, other, pipeline):
    client.force_login(other)
    response = client.get(f"/api/v1/pipelines/{pipeline.pk}/")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    response = client.get("/api/v1/no-such-operation/")
    assert response.status_code == 404
    assert response.json() == {
        "code": "not_found",
        "message": "No API operation at /api/v1/no-such-operation/; see /api/v1/docs/.",
        "errors": [{"path": "", "message": "No API operation at /api/v1/no-such-operation/; see /api/v1/docs/."}],
    }
