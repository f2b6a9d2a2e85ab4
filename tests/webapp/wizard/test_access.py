"""Who may open what: the owner, another user (404, as if it did not exist) and anonymous (login page)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.pipelines.services import pipeline_create
from webapp.wizard.models import WizardDraft
from webapp.wizard.services import draft_get_or_create

pytestmark = pytest.mark.django_db

DRAFT_URLS = [
    ("wizard:step", {"step": "kafka"}, "get"),
    ("wizard:step", {"step": "kafka"}, "post"),
    ("wizard:discard", {}, "post"),
    ("wizard:draft_spec_download", {}, "get"),
    ("wizard:kafka_test", {}, "post"),
    ("wizard:topic_list", {}, "get"),
    ("wizard:sample_fetch", {}, "post"),
    ("wizard:key_advice", {}, "post"),
    ("wizard:transform_check", {}, "post"),
    ("wizard:clickhouse_test", {}, "post"),
    ("wizard:clickhouse_tables", {}, "get"),
    ("wizard:clickhouse_columns", {}, "get"),
    ("wizard:review_spec", {}, "get"),
    ("wizard:keep_input", {"step": "kafka"}, "post"),
]
PIPELINE_URLS = [
    ("pipelines:detail", {}, "get"),
    ("pipelines:spec_download", {}, "get"),
    ("wizard:wizard_edit", {}, "get"),
    ("pipelines:action", {"action": "deploy"}, "post"),
    ("pipelines:metrics", {}, "get"),
]


@pytest.fixture
def draft(owner):
    return draft_get_or_create(user=owner)


@pytest.fixture
def pipeline(owner, kafka_connection, clickhouse_connection):
    spec = {
        "source": {"topics": ["users"], "fields": [{"path": "event_id", "type": "uuid"}]},
        "sink": {
            "clickhouse": {"database": "default"},
            "table": "signups",
            "order_by": ["event_id"],
            "columns": [{"field": "event_id", "column": "event_id", "type": "UUID"}],
        },
    }
    return pipeline_create(
        owner=owner,
        name="signups",
        kafka_connection=kafka_connection,
        clickhouse_connection=clickhouse_connection,
        spec=spec,
    )


@pytest.mark.parametrize(("name", "kwargs", "method"), DRAFT_URLS)
def test_someone_elses_draft_is_not_found(client, other, draft, name, kwargs, method):
    client.force_login(other)
    response = getattr(client, method)(reverse(name, kwargs={"draft_id": draft.pk, **kwargs}))
    assert response.status_code == 404
    assert WizardDraft.objects.filter(pk=draft.pk).exists()


@pytest.mark.parametrize(("name", "kwargs", "method"), DRAFT_URLS)
def test_anonymous_users_are_sent_to_log_in(client, draft, name, kwargs, method):
    url = reverse(name, kwargs={"draft_id": draft.pk, **kwargs})
    response = getattr(client, method)(url)
    assert response.status_code == 302
    assert response.url.startswith("/login/?next=")


@pytest.mark.parametrize(("name", "kwargs", "method"), PIPELINE_URLS)
def test_someone_elses_pipeline_is_not_found(client, other, pipeline, name, kwargs, method):
    client.force_login(other)
    response = getattr(client, method)(reverse(name, kwargs={"pk": pipeline.pk, **kwargs}))
    assert response.status_code == 404
    pipeline.refresh_from_db()
    assert pipeline.status == "draft"
    assert not WizardDraft.objects.filter(pipeline=pipeline).exists()


@pytest.mark.parametrize(("name", "kwargs", "method"), PIPELINE_URLS)
def test_anonymous_cannot_open_pipelines(client, pipeline, name, kwargs, method):
    response = getattr(client, method)(reverse(name, kwargs={"pk": pipeline.pk, **kwargs}))
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_the_owner_sees_the_pipeline_and_others_do_not_list_it(client, owner, other, pipeline):
    client.force_login(owner)
    assert "signups" in client.get(reverse("pipelines:list")).content.decode()
    page = client.get(reverse("pipelines:detail", kwargs={"pk": pipeline.pk}))
    assert page.status_code == 200 and "&quot;table&quot;: &quot;signups&quot;" in page.content.decode()
    download = client.get(reverse("pipelines:spec_download", kwargs={"pk": pipeline.pk}))
    assert download["Content-Disposition"] == 'attachment; filename="signups.json"'
    assert download.json()["sink"]["table"] == "signups"
    client.force_login(other)
    assert "signups" not in client.get(reverse("pipelines:list")).content.decode()


def test_the_owner_can_deploy_from_the_pipeline_page(client, owner, pipeline):
    client.force_login(owner)
    response = client.post(reverse("pipelines:action", kwargs={"pk": pipeline.pk, "action": "deploy"}))
    assert response.status_code == 302
    pipeline.refresh_from_db()
    assert pipeline.status == "deploy_requested"
    assert "Deploy requested" in client.get(response.url).content.decode()


def test_each_user_has_their_own_new_draft(client, owner, other):
    client.force_login(owner)
    client.get(reverse("wizard:wizard_new"))
    client.force_login(other)
    client.get(reverse("wizard:wizard_new"))
    client.get(reverse("wizard:wizard_new"))
    assert WizardDraft.objects.filter(user=owner).count() == 1
    assert WizardDraft.objects.filter(user=other).count() == 1


def test_discarding_a_draft_starts_over(client, owner, draft):
    client.force_login(owner)
    response = client.post(reverse("wizard:discard", kwargs={"draft_id": draft.pk}))
    assert response.status_code == 302 and response.url == reverse("pipelines:list")
    assert not WizardDraft.objects.filter(pk=draft.pk).exists()


def test_login_page_logs_in_and_logout_is_a_post(client, owner):
    page = client.get(reverse("login"))
    assert page.status_code == 200 and "Log in to ClearFlow" in page.content.decode()
    response = client.post(reverse("login"), {"username": "owner", "password": "wrong"})
    assert "Please enter a correct username and password" in response.content.decode()
    response = client.post(reverse("login"), {"username": "owner", "password": "owner-pass-123"})
    assert response.status_code == 302 and response.url == "/"
    home = client.get("/")
    html = home.content.decode()
    assert home.status_code == 200
    for link in ("Pipelines", "New pipeline", "API docs", "Health", "Log out"):
        assert link in html
    assert "Admin" not in html  # staff only
    assert client.post(reverse("logout")).status_code == 302
    assert client.get("/").status_code == 302


def test_operators_see_drafts_in_the_admin(client, owner, draft):
    from django.contrib.auth import get_user_model

    admin_user = get_user_model().objects.create_superuser("ops", password="ops-pass-123")
    client.force_login(admin_user)
    html = client.get(reverse("admin:wizard_wizarddraft_changelist")).content.decode()
    assert "owner" in html and "kafka" in html


def test_the_owner_can_delete_a_deploying_pipeline_and_the_outsider_cannot(client, owner, other, pipeline):
    from webapp.pipelines.models import Pipeline

    client.force_login(owner)
    client.post(reverse("pipelines:action", kwargs={"pk": pipeline.pk, "action": "deploy"}))
    assert Pipeline.objects.get(pk=pipeline.pk).status == "deploy_requested"
    client.force_login(other)
    response = client.post(reverse("pipelines:action", kwargs={"pk": pipeline.pk, "action": "delete"}))
    assert response.status_code == 404 and Pipeline.objects.filter(pk=pipeline.pk).exists()
    client.force_login(owner)
    response = client.post(reverse("pipelines:action", kwargs={"pk": pipeline.pk, "action": "delete"}))
    assert response.status_code == 302 and response.url == reverse("pipelines:list")
    assert not Pipeline.objects.filter(pk=pipeline.pk).exists()
