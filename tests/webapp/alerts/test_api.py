"""The alerts' REST API: channels, rules per pipeline, history; for the owner, an outsider and nobody.
Webhook URLs are write-only: never in an answer, never in the logs."""

from __future__ import annotations

import logging

import pytest

from tests.pipeline_states import walk_to
from tests.webapp.alerts.conftest import make_pipeline
from webapp.alerts import services
from webapp.alerts.models import AlertChannel, AlertRule
from webapp.pipelines.models import PipelineStatus

pytestmark = pytest.mark.django_db

SECRET_URL = "https://hooks.example.com/services/T000/B000/zq-very-secret-token"


@pytest.fixture
def hook(api):
    response = api.post(
        "/api/v1/alerts/channels/",
        {"name": "slack", "kind": "webhook", "webhook_url": SECRET_URL, "webhook_format": "slack"},
        format="json",
    )
    assert response.status_code == 201, response.json()
    return response.json()


def test_channel_crud_keeps_the_webhook_url_secret(api, hook, caplog):
    caplog.set_level(logging.DEBUG)
    assert hook["has_webhook_url"] is True
    assert hook["webhook_url_masked"] == "https://hooks.example.com/••••••"
    assert "webhook_url" not in hook
    listed = api.get("/api/v1/alerts/channels/")
    assert [c["name"] for c in listed.json()] == ["slack"]
    changed = api.patch(f"/api/v1/alerts/channels/{hook['id']}/", {"enabled": False}, format="json")
    assert changed.status_code == 200 and changed.json()["enabled"] is False
    assert AlertChannel.objects.get(pk=hook["id"]).webhook_url == SECRET_URL  # kept when not sent
    mail = api.post(
        "/api/v1/alerts/channels/", {"name": "ops", "kind": "email", "email_to": "ops@example.com"}, format="json"
    )
    assert mail.status_code == 201 and mail.json()["email_to"] == "ops@example.com"
    for response in (listed, changed, api.get(f"/api/v1/alerts/channels/{hook['id']}/")):
        assert "zq-very-secret-token" not in response.content.decode()
    assert "zq-very-secret-token" not in caplog.text
    assert api.delete(f"/api/v1/alerts/channels/{hook['id']}/").status_code == 204
    assert not AlertChannel.objects.filter(pk=hook["id"]).exists()


def test_bad_channel_input_is_a_400_naming_the_field_without_echoing_the_url(api):
    response = api.post(
        "/api/v1/alerts/channels/",
        {"name": "meta", "kind": "webhook", "webhook_url": "http://169.254.169.254/zq-secret-path"},
        format="json",
    )
    assert response.status_code == 400
    body = response.json()
    assert body["errors"] == [
        {"path": "webhook_url", "message": "The host 169.254.169.254 is in a network ClearFlow may not connect to."}
    ]
    assert "zq-secret-path" not in response.content.decode()
    wrong_type = api.post("/api/v1/alerts/channels/", {"name": "x", "kind": "email", "enabled": "yes"}, format="json")
    assert wrong_type.status_code == 400
    assert wrong_type.json()["errors"][0]["path"] == "enabled"
    assert not AlertChannel.objects.exists()


def test_rules_of_a_pipeline_are_listed_and_edited(api, owner):
    pipeline = make_pipeline(owner)
    url = f"/api/v1/pipelines/{pipeline.pk}/alert-rules/"
    rules = api.get(url).json()
    assert [r["kind"] for r in rules] == [
        "pipeline_failed",
        "duplicates",
        "dead_letter_rate",
        "consumer_lag",
        "no_events",
        "behind",
    ]
    lag = next(r for r in rules if r["kind"] == "consumer_lag")
    assert lag["title"] == "Consumer lag over a threshold"
    assert lag["threshold_means"] == "Records behind more than"
    assert lag["state"] == "ok"
    changed = api.patch(f"{url}consumer_lag/", {"threshold": 5000, "minutes": 3, "renotify_minutes": 15}, format="json")
    assert changed.status_code == 200
    assert (changed.json()["threshold"], changed.json()["minutes"], changed.json()["renotify_minutes"]) == (5000, 3, 15)
    bad = api.patch(f"{url}dead_letter_rate/", {"threshold": 101}, format="json")
    assert bad.status_code == 400
    assert bad.json()["errors"] == [{"path": "threshold", "message": "A percentage: at most 100."}]
    assert api.get(f"{url}nonsense/").status_code == 404


def test_history_lists_incidents_with_their_notifications(api, owner):
    pipeline = make_pipeline(owner)
    services.alert_channel_create(owner=owner, data={"name": "ops", "kind": "email", "email_to": "ops@example.com"})
    walk_to(pipeline, PipelineStatus.FAILED, message="boom")
    services.alerts_evaluate()
    incidents = api.get("/api/v1/alerts/incidents/").json()
    assert len(incidents) == 1
    incident = incidents[0]
    assert (incident["pipeline"], incident["pipeline_name"], incident["kind"]) == (
        pipeline.pk,
        "orders",
        "pipeline_failed",
    )
    assert incident["resolved_at"] is None
    assert incident["notifications"][0]["event"] == "firing"
    assert incident["notifications"][0]["deliveries"] == [
        {"channel": incident["notifications"][0]["deliveries"][0]["channel"], "channel_name": "ops",
         "status": "pending", "attempts": 0, "last_error": "", "sent_at": None}
    ]  # fmt: skip
    assert api.get(f"/api/v1/alerts/incidents/{incident['id']}/").json()["id"] == incident["id"]
    assert len(api.get(f"/api/v1/alerts/incidents/?pipeline={pipeline.pk}&open=true").json()) == 1
    bad = api.get("/api/v1/alerts/incidents/?limit=0")
    assert bad.status_code == 400 and bad.json()["errors"][0]["path"] == "limit"


def test_an_outsider_sees_nothing_and_changes_nothing(api, other_api, owner, hook):
    pipeline = make_pipeline(owner)
    walk_to(pipeline, PipelineStatus.FAILED, message="boom")
    services.alerts_evaluate()
    incident_id = api.get("/api/v1/alerts/incidents/").json()[0]["id"]
    for url in (
        f"/api/v1/alerts/channels/{hook['id']}/",
        f"/api/v1/pipelines/{pipeline.pk}/alert-rules/",
        f"/api/v1/pipelines/{pipeline.pk}/alert-rules/pipeline_failed/",
        f"/api/v1/alerts/incidents/{incident_id}/",
        f"/api/v1/alerts/incidents/?pipeline={pipeline.pk}",
    ):
        assert other_api.get(url).status_code == 404, url
    assert other_api.patch(f"/api/v1/alerts/channels/{hook['id']}/", {"name": "x"}, format="json").status_code == 404
    assert other_api.delete(f"/api/v1/alerts/channels/{hook['id']}/").status_code == 404
    patch = other_api.patch(
        f"/api/v1/pipelines/{pipeline.pk}/alert-rules/pipeline_failed/", {"enabled": False}, format="json"
    )
    assert patch.status_code == 404
    assert other_api.get("/api/v1/alerts/channels/").json() == []
    assert other_api.get("/api/v1/alerts/incidents/").json() == []
    assert AlertChannel.objects.get(pk=hook["id"]).name == "slack"
    assert AlertRule.objects.get(pipeline=pipeline, kind="pipeline_failed").enabled is True


def test_anonymous_gets_401(anon_api):
    for url in ("/api/v1/alerts/channels/", "/api/v1/alerts/incidents/", "/api/v1/pipelines/1/alert-rules/"):
        response = anon_api.get(url)
        assert response.status_code == 401 and response.json()["code"] == "not_authenticated"


def test_the_schema_documents_the_alert_operations(anon_api):
    paths = anon_api.get("/api/v1/schema/?format=json").json()["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/alerts/channels/"])
    assert {"get", "patch", "delete"} <= set(paths["/api/v1/alerts/channels/{id}/"])
    assert {"get", "patch"} <= set(paths["/api/v1/pipelines/{id}/alert-rules/{kind}/"])
    assert "get" in paths["/api/v1/alerts/incidents/"]
