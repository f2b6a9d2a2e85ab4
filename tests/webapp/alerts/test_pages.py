"""The alert pages: the owner sees and edits; another user gets 404; nobody logged in goes to the login page."""

from __future__ import annotations

import logging

import pytest

from tests.pipeline_states import walk_to
from tests.webapp.alerts.conftest import make_pipeline, rule
from webapp.alerts import services
from webapp.alerts.models import AlertChannel
from webapp.pipelines.models import PipelineStatus

pytestmark = pytest.mark.django_db

SECRET_URL = "https://hooks.example.com/services/zq-page-secret"


@pytest.fixture
def logged_in(client, owner):
    client.force_login(owner)
    return client


def test_channels_page_adds_a_webhook_and_never_shows_its_url(logged_in, owner, caplog):
    caplog.set_level(logging.DEBUG)
    page = logged_in.get("/alerts/channels/")
    assert page.status_code == 200 and "No channels yet" in page.content.decode()
    response = logged_in.post(
        "/alerts/channels/",
        {"name": "hook", "kind": "webhook", "webhook_url": SECRET_URL, "webhook_format": "json", "enabled": "on"},
        follow=True,
    )
    html = response.content.decode()
    assert "Channel hook added." in html
    assert "https://hooks.example.com/••••••" in html
    assert "zq-page-secret" not in html
    channel = AlertChannel.objects.get(owner=owner)
    edit = logged_in.get(f"/alerts/channels/{channel.pk}/").content.decode()
    assert "zq-page-secret" not in edit
    # Saving the form without typing a URL keeps the stored one.
    logged_in.post(
        f"/alerts/channels/{channel.pk}/",
        {"name": "hook 2", "kind": "webhook", "webhook_url": "", "webhook_format": "slack", "enabled": "on"},
    )
    channel.refresh_from_db()
    assert (channel.name, channel.webhook_format, channel.webhook_url) == ("hook 2", "slack", SECRET_URL)
    assert "zq-page-secret" not in caplog.text


def test_a_bad_address_is_shown_next_to_its_field_and_nothing_is_saved(logged_in):
    response = logged_in.post(
        "/alerts/channels/", {"name": "mail", "kind": "email", "email_to": "not-an-address", "webhook_format": "json"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    field = html[html.index('id="field-email_to"') :]
    assert "&#x27;not-an-address&#x27; is not an email address." in field[: field.index("</div>\n</div>") + 20]
    assert not AlertChannel.objects.exists()


def test_delete_a_channel(logged_in, owner):
    channel = services.alert_channel_create(owner=owner, data={"name": "m", "kind": "email", "email_to": "a@b.example"})
    response = logged_in.post(f"/alerts/channels/{channel.pk}/delete/", follow=True)
    assert "Channel m deleted." in response.content.decode()
    assert not AlertChannel.objects.exists()


def test_rules_page_edits_a_rule_and_shows_errors_in_place(logged_in, owner):
    pipeline = make_pipeline(owner)
    page = logged_in.get(f"/pipelines/{pipeline.pk}/alerts/").content.decode()
    for title in ("Pipeline failed", "Duplicates found by the audit", "Dead-letter rate over a threshold",
                  "Consumer lag over a threshold", "No events"):  # fmt: skip
        assert title in page
    assert "Records behind more than" in page
    form = {"kind": "consumer_lag", "consumer_lag-enabled": "on", "consumer_lag-threshold": "2500",
            "consumer_lag-minutes": "5", "consumer_lag-renotify_minutes": "20"}  # fmt: skip
    saved = logged_in.post(f"/pipelines/{pipeline.pk}/alerts/", form, follow=True)
    assert "saved." in saved.content.decode()
    lag = rule(pipeline, "consumer_lag")
    assert (lag.threshold, lag.minutes, lag.renotify_minutes) == (2500, 5, 20)
    bad = logged_in.post(
        f"/pipelines/{pipeline.pk}/alerts/",
        {"kind": "dead_letter_rate", "dead_letter_rate-threshold": "250", "dead_letter_rate-minutes": "15",
         "dead_letter_rate-renotify_minutes": "60", "dead_letter_rate-enabled": "on"},
    )  # fmt: skip
    assert bad.status_code == 200
    assert "A percentage: at most 100." in bad.content.decode()
    assert rule(pipeline, "dead_letter_rate").threshold == 1.0


def test_history_and_the_pipeline_page_show_a_firing_alert(logged_in, owner):
    pipeline = make_pipeline(owner)
    walk_to(pipeline, PipelineStatus.FAILED, message="zq boom")
    services.alerts_evaluate()
    history = logged_in.get("/alerts/").content.decode()
    assert "Pipeline failed" in history and "zq boom" in history and "firing" in history
    detail = logged_in.get(f"/pipelines/{pipeline.pk}/").content.decode()
    assert f"/pipelines/{pipeline.pk}/alerts/summary/" in detail
    summary = logged_in.get(f"/pipelines/{pipeline.pk}/alerts/summary/").content.decode()
    assert 'id="alerts-firing"' in summary and "Pipeline failed" in summary


def test_another_user_gets_404_and_nobody_gets_the_login_page(client, owner, other):
    pipeline = make_pipeline(owner)
    channel = services.alert_channel_create(owner=owner, data={"name": "m", "kind": "email", "email_to": "a@b.example"})
    walk_to(pipeline, PipelineStatus.FAILED, message="zq boom")
    services.alerts_evaluate()
    owned = [
        f"/pipelines/{pipeline.pk}/alerts/",
        f"/pipelines/{pipeline.pk}/alerts/summary/",
        f"/alerts/channels/{channel.pk}/",
    ]
    for url in [*owned, "/alerts/", "/alerts/channels/"]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url
    client.force_login(other)
    for url in owned:
        assert client.get(url).status_code == 404, url
    assert client.post(f"/alerts/channels/{channel.pk}/delete/").status_code == 404
    assert client.post(f"/pipelines/{pipeline.pk}/alerts/", {"kind": "pipeline_failed"}).status_code == 404
    assert "zq boom" not in client.get("/alerts/").content.decode()
    assert AlertChannel.objects.filter(pk=channel.pk).exists()


def test_the_history_says_in_words_what_a_traceback_ends_with(logged_in, owner):
    pipeline = make_pipeline(owner)
    message = (
        "Failed: The job failed (exit code 1): pyspark.errors.exceptions.captured.StreamingQueryException: "
        "[STREAM_FAILED] Query terminated with exception: Traceback (most recent call last):\n"
        '  File "/app/spark_jobs/source.py", line 88, in read\n'
        "    raise ValueError(reason)\n"
        "ValueError: offset 42 of orders/0 is gone"
    )
    walk_to(pipeline, PipelineStatus.FAILED, message=message)
    services.alerts_evaluate()
    history = logged_in.get("/alerts/").content.decode()
    # The incident's own details element: the page's header has one before it (the workspace switcher).
    words, detail = history.split('<details class="stack-trace"', 1)
    assert (
        "The pipeline failed: The job failed (exit code 1): pyspark.errors.exceptions.captured."
        "StreamingQueryException: [STREAM_FAILED] Query terminated with exception: "
        "ValueError: offset 42 of orders/0 is gone"
    ) in words
    assert "Traceback" not in words and "File &quot;" not in words
    assert "<summary>technical detail</summary>" in detail and "Traceback (most recent call last):" in detail
