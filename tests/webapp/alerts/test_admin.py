"""The admin's alert pages: webhook URLs masked and kept, the services' checks next to the fields, the history."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.pipeline_states import walk_to
from tests.webapp.alerts.conftest import make_pipeline
from tests.webapp.conftest import raw_column
from webapp.alerts import services
from webapp.alerts.models import AlertChannel, AlertIncident
from webapp.pipelines.models import PipelineStatus
from webapp.workspaces.services import workspace_for_new_objects

pytestmark = pytest.mark.django_db
SECRET_URL = "https://hooks.example.com/services/zq-admin-secret"


@pytest.fixture
def admin_client(client):
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123")
    client.force_login(admin)
    return client


def form(owner, **values):
    return {"owner": owner.pk, "workspace": workspace_for_new_objects(user=owner).pk,
            "name": "hook", "kind": "webhook", "enabled": "on", "email_to": "",
            "webhook_url": "", "webhook_format": "json", **values}  # fmt: skip


def test_add_and_change_a_webhook_channel_without_ever_showing_its_url(admin_client, owner):
    added = admin_client.post("/admin/alerts/alertchannel/add/", form(owner, webhook_url=SECRET_URL))
    assert added.status_code == 302, added.content.decode()[:2000]
    channel = AlertChannel.objects.get()
    assert "zq-admin-secret" not in raw_column("alerts_alertchannel", "webhook_url", channel.pk)
    for url in ("/admin/alerts/alertchannel/", f"/admin/alerts/alertchannel/{channel.pk}/change/"):
        page = admin_client.get(url)
        assert page.status_code == 200 and "zq-admin-secret" not in page.content.decode()
    changed = admin_client.post(f"/admin/alerts/alertchannel/{channel.pk}/change/", form(owner, name="renamed"))
    assert changed.status_code == 302
    channel.refresh_from_db()
    assert (channel.name, channel.webhook_url) == ("renamed", SECRET_URL)


def test_a_forbidden_host_is_shown_next_to_the_field(admin_client, owner):
    response = admin_client.post(
        "/admin/alerts/alertchannel/add/", form(owner, webhook_url="http://169.254.169.254/zq-admin-secret")
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "The host 169.254.169.254 is in a network ClearFlow may not connect to." in html
    assert not AlertChannel.objects.exists()


def test_rules_and_incidents_are_listed(admin_client, owner):
    pipeline = make_pipeline(owner)
    walk_to(pipeline, PipelineStatus.FAILED, message="boom")
    services.alerts_evaluate()
    incident = AlertIncident.objects.get()
    for url in (
        "/admin/alerts/alertrule/",
        "/admin/alerts/alertincident/",
        f"/admin/alerts/alertincident/{incident.pk}/change/",
        "/admin/alerts/alertnotification/",
    ):
        assert admin_client.get(url).status_code == 200, url
    rule = pipeline.alert_rules.get(kind="no_events")
    response = admin_client.post(
        f"/admin/alerts/alertrule/{rule.pk}/change/",
        {"enabled": "on", "threshold": "0", "minutes": "45", "renotify_minutes": "30"},
    )
    assert response.status_code == 302
    rule.refresh_from_db()
    assert (rule.minutes, rule.renotify_minutes) == (45, 30)
    dead = pipeline.alert_rules.get(kind="dead_letter_rate")
    refused = admin_client.post(
        f"/admin/alerts/alertrule/{dead.pk}/change/",
        {"enabled": "on", "threshold": "150", "minutes": "15", "renotify_minutes": "60"},
    )
    assert refused.status_code == 200 and "A percentage: at most 100." in refused.content.decode()
    dead.refresh_from_db()
    assert dead.threshold == 1.0
