"""Alert services: default rules, channel checks, and the evaluation's fire-once / re-notify / resolve cycle.

Deliveries are only recorded here (the tests run inside a transaction, so nothing is enqueued); sending them
through a real Celery worker, webhook receiver and SMTP server is tested in tests/worker/test_alerts.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
from django.core.exceptions import ValidationError
from django.utils import timezone

from spark_jobs.metrics import BatchMetrics, MetricsPublisher, history_key, latest_key, totals_key
from tests.pipeline_states import walk_to
from tests.webapp.alerts.conftest import make_pipeline, rule
from tests.webapp.conftest import raw_column
from webapp.alerts import services
from webapp.alerts.models import (
    AlertChannel,
    AlertDelivery,
    AlertIncident,
    AlertNotification,
    AlertRule,
    RuleKind,
    RuleState,
)
from webapp.pipelines.models import PipelineStatus

pytestmark = pytest.mark.django_db
S = PipelineStatus


@pytest.fixture
def channels(owner):
    return [
        services.alert_channel_create(
            owner=owner, data={"name": "ops mail", "kind": "email", "email_to": "ops@example.com, lead@example.com"}
        ),
        services.alert_channel_create(
            owner=owner, data={"name": "hook", "kind": "webhook", "webhook_url": "http://127.0.0.1:9/hook?token=s3cr3t"}
        ),
    ]


def fail(pipeline, message: str = "The job exited with code 1.") -> None:
    walk_to(pipeline, S.FAILED, message=message)


def notifications(pipeline) -> list[str]:
    return list(
        AlertNotification.objects.filter(incident__pipeline=pipeline).order_by("id").values_list("event", flat=True)
    )


def test_a_new_pipeline_has_every_rule_with_its_default(pipeline):
    rules = {r.kind: r for r in AlertRule.objects.filter(pipeline=pipeline)}
    assert set(rules) == set(RuleKind.values)
    assert all(r.enabled and r.state == RuleState.OK for r in rules.values())
    assert (rules["dead_letter_rate"].threshold, rules["dead_letter_rate"].minutes) == (1.0, 15)
    assert (rules["consumer_lag"].threshold, rules["consumer_lag"].minutes) == (100_000, 10)
    assert rules["no_events"].minutes == 30
    assert rules["duplicates"].threshold == 0
    assert all(r.renotify_minutes == 60 for r in rules.values())


def test_a_failed_pipeline_fires_once_renotifies_and_resolves(pipeline, channels):
    now = timezone.now()
    fail(pipeline)
    first = services.alerts_evaluate(now=now)
    assert first.fired == 1
    assert services.alerts_evaluate(now=now + timedelta(seconds=30)).fired == 0  # still failed: no second alert
    incident = AlertIncident.objects.get(pipeline=pipeline)
    assert incident.kind == "pipeline_failed" and incident.resolved_at is None
    assert "The job exited with code 1." in incident.summary
    assert notifications(pipeline) == ["firing"]
    firing = AlertNotification.objects.get(incident=incident)
    assert firing.message.startswith("[FIRING] orders: Pipeline failed")
    assert sorted(d.channel_name for d in firing.deliveries.all()) == ["hook", "ops mail"]
    assert rule(pipeline, "pipeline_failed").state == RuleState.FIRING

    assert services.alerts_evaluate(now=now + timedelta(minutes=59)).renotified == 0
    assert services.alerts_evaluate(now=now + timedelta(minutes=61)).renotified == 1
    assert services.alerts_evaluate(now=now + timedelta(minutes=62)).renotified == 0
    assert notifications(pipeline) == ["firing", "renotify"]

    walk_to(pipeline, S.DEPLOY_REQUESTED)
    assert services.alerts_evaluate(now=now + timedelta(minutes=63)).resolved == 1
    assert services.alerts_evaluate(now=now + timedelta(minutes=64)).resolved == 0
    assert notifications(pipeline) == ["firing", "renotify", "resolved"]
    incident.refresh_from_db()
    assert incident.resolved_at == now + timedelta(minutes=63)
    resolved = AlertNotification.objects.get(incident=incident, event="resolved")
    assert resolved.message.startswith("[RESOLVED] orders: Pipeline failed (lasted 63 min)")
    assert rule(pipeline, "pipeline_failed").state == RuleState.OK
    assert AlertDelivery.objects.filter(notification__incident=incident).count() == 6  # 3 notifications x 2 channels


def test_two_workers_with_the_same_view_fire_one_incident(pipeline, channels):
    fail(pipeline)
    now = timezone.now()
    stale = AlertRule.objects.select_related("pipeline").get(pipeline=pipeline, kind="pipeline_failed")
    seen_by_second = AlertRule.objects.select_related("pipeline").get(pk=stale.pk)
    condition = services.conditions_for([stale], now=now)[stale.pk]
    assert services._evaluate_rule(stale, condition, now=now) == "fired"
    # The second worker read the rule as "ok" before the first fired: its compare-and-set finds "firing".
    assert services._evaluate_rule(seen_by_second, condition, now=now) is None
    assert AlertIncident.objects.filter(pipeline=pipeline).count() == 1
    assert notifications(pipeline) == ["firing"]
    # Likewise for a re-notification: the incident's last_notified_at is the compare-and-set.
    later = now + timedelta(hours=2)
    a = AlertRule.objects.select_related("pipeline").get(pk=stale.pk)
    b = AlertRule.objects.select_related("pipeline").get(pk=stale.pk)
    assert services._evaluate_rule(a, condition, now=later) == "renotified"
    assert services._evaluate_rule(b, condition, now=later) is None
    assert notifications(pipeline) == ["firing", "renotify"]


def test_renotify_zero_only_tells_start_and_end(pipeline):
    services.alert_rule_update(rule=rule(pipeline, "pipeline_failed"), data={"renotify_minutes": 0})
    now = timezone.now()
    fail(pipeline)
    services.alerts_evaluate(now=now)
    services.alerts_evaluate(now=now + timedelta(days=2))
    assert notifications(pipeline) == ["firing"]


def test_turning_a_firing_rule_off_resolves_it(pipeline):
    fail(pipeline)
    services.alerts_evaluate()
    services.alert_rule_update(rule=rule(pipeline, "pipeline_failed"), data={"enabled": False})
    services.alerts_evaluate()
    assert notifications(pipeline) == ["firing", "resolved"]
    assert "turned off" in AlertNotification.objects.get(event="resolved").message
    services.alerts_evaluate()
    assert notifications(pipeline) == ["firing", "resolved"]


# -- the metric rules read the job's series in Redis -------------------------------------------------------


@pytest.fixture
def running(pipeline, redis_url, settings):
    settings.REDIS_URL = redis_url
    client = redis.Redis.from_url(redis_url)
    name = pipeline.job_name
    client.delete(history_key(name), totals_key(name), latest_key(name))
    walk_to(pipeline, S.RUNNING)
    # Running for an hour already (the "no events" rule waits for its minutes after a start).
    type(pipeline).objects.filter(pk=pipeline.pk).update(status_changed_at=timezone.now() - timedelta(hours=1))
    return pipeline


def publish(pipeline, redis_url, *, at, input_rows=100, dead=0, lag=0, batch_id=0) -> None:
    MetricsPublisher(pipeline.job_name, redis_url).publish(
        BatchMetrics(
            pipeline=pipeline.job_name,
            batch_id=batch_id,
            timestamp=at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            input_rows=input_rows,
            duplicates_dropped=0,
            rows_written=input_rows - dead,
            dead_letters=dead,
            filtered_out=0,
            batch_duration_ms=100,
            lag={"t": {"0": lag}},
            total_lag=lag,
        )
    )


def test_dead_letter_rate_over_its_threshold_fires_and_resolves(running, redis_url):
    now = timezone.now().replace(microsecond=0)
    publish(running, redis_url, at=now - timedelta(minutes=5), input_rows=1000, dead=30, batch_id=1)
    result = services.alerts_evaluate(now=now)
    assert result.fired == 1
    incident = AlertIncident.objects.get(pipeline=running)
    assert incident.kind == "dead_letter_rate"
    assert incident.value == 3.0
    assert "30 of 1000 events (3.00%)" in incident.summary
    # 20 minutes later the bad batch is out of the 15-minute window; a clean batch came in.
    publish(running, redis_url, at=now + timedelta(minutes=19), input_rows=1000, dead=0, batch_id=2)
    assert services.alerts_evaluate(now=now + timedelta(minutes=20)).resolved == 1


def test_consumer_lag_must_last_its_minutes_before_it_fires(running, redis_url):
    now = timezone.now().replace(microsecond=0)
    publish(running, redis_url, at=now, lag=500_000)
    assert services.alerts_evaluate(now=now).fired == 0
    assert rule(running, "consumer_lag").state == RuleState.PENDING
    publish(running, redis_url, at=now + timedelta(minutes=9, seconds=50), lag=400_000, batch_id=1)
    assert services.alerts_evaluate(now=now + timedelta(minutes=9, seconds=55)).fired == 0
    publish(running, redis_url, at=now + timedelta(minutes=10), lag=300_000, batch_id=2)
    assert services.alerts_evaluate(now=now + timedelta(minutes=10, seconds=5)).fired == 1
    assert AlertIncident.objects.get(pipeline=running).value == 300_000
    publish(running, redis_url, at=now + timedelta(minutes=11), lag=10, batch_id=3)
    assert services.alerts_evaluate(now=now + timedelta(minutes=11, seconds=5)).resolved == 1


def test_lag_that_drops_before_its_minutes_never_fires(running, redis_url):
    now = timezone.now().replace(microsecond=0)
    publish(running, redis_url, at=now, lag=500_000)
    services.alerts_evaluate(now=now)
    publish(running, redis_url, at=now + timedelta(minutes=5), lag=0, batch_id=1)
    services.alerts_evaluate(now=now + timedelta(minutes=5, seconds=1))
    assert rule(running, "consumer_lag").state == RuleState.OK
    publish(running, redis_url, at=now + timedelta(minutes=6), lag=500_000, batch_id=2)
    services.alerts_evaluate(now=now + timedelta(minutes=6, seconds=1))
    assert services.alerts_evaluate(now=now + timedelta(minutes=12)).fired == 0  # pending restarted at minute 6
    assert not AlertIncident.objects.filter(pipeline=running).exists()


def test_no_events_for_its_minutes_fires_and_an_event_resolves_it(running, redis_url):
    now = timezone.now().replace(microsecond=0)
    publish(running, redis_url, at=now - timedelta(minutes=29))
    assert services.alerts_evaluate(now=now).fired == 0
    assert services.alerts_evaluate(now=now + timedelta(minutes=2)).fired == 1
    incident = AlertIncident.objects.get(pipeline=running)
    assert incident.kind == "no_events"
    assert "no events for 31 minutes" in incident.summary
    publish(running, redis_url, at=now + timedelta(minutes=3), batch_id=1)
    assert services.alerts_evaluate(now=now + timedelta(minutes=3, seconds=1)).resolved == 1


def test_redis_down_neither_fires_nor_resolves(running, redis_url, settings):
    now = timezone.now().replace(microsecond=0)
    publish(running, redis_url, at=now - timedelta(hours=1))
    assert services.alerts_evaluate(now=now).fired == 1  # no events for an hour
    settings.REDIS_URL = "redis://127.0.0.1:9/0"
    assert services.alerts_evaluate(now=now + timedelta(minutes=1)).resolved == 0
    assert rule(running, "no_events").state == RuleState.FIRING


def test_a_stopped_pipeline_resolves_its_metric_alerts(running, redis_url):
    now = timezone.now().replace(microsecond=0)
    publish(running, redis_url, at=now - timedelta(hours=1))
    services.alerts_evaluate(now=now)
    walk_to(running, S.STOPPED)
    assert services.alerts_evaluate(now=now + timedelta(seconds=30)).resolved == 1


# -- channels --------------------------------------------------------------------------------------------


def test_webhook_url_is_encrypted_at_rest_and_shown_masked(channels):
    hook = channels[1]
    stored = raw_column("alerts_alertchannel", "webhook_url", hook.pk)
    assert "s3cr3t" not in stored and "127.0.0.1" not in stored
    assert AlertChannel.objects.get(pk=hook.pk).webhook_url == "http://127.0.0.1:9/hook?token=s3cr3t"
    assert hook.masked_webhook_url == "http://127.0.0.1:9/••••••"


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"kind": "email", "email_to": ""}, "email_to", "Give at least one email address."),
        ({"kind": "email", "email_to": "ops@example.com, nope"}, "email_to", "'nope' is not an email address."),
        ({"kind": "webhook", "webhook_url": ""}, "webhook_url", "Give the webhook's URL."),
        (
            {"kind": "webhook", "webhook_url": "ftp://x.example/a"},
            "webhook_url",
            "Not a valid http:// or https:// URL.",
        ),
        (
            {"kind": "webhook", "webhook_url": "http://169.254.169.254/latest/meta-data"},
            "webhook_url",
            "The host 169.254.169.254 is in a network ClearFlow may not connect to.",
        ),
        ({"kind": "pager"}, "kind", "Value 'pager' is not a valid choice."),
    ],
)
def test_bad_channels_are_refused_field_by_field_and_nothing_is_saved(owner, data, field, message):
    with pytest.raises(ValidationError) as caught:
        services.alert_channel_create(owner=owner, data={"name": "bad", **data})
    assert caught.value.message_dict[field] == [message]
    assert not AlertChannel.objects.exists()


def test_channel_names_are_unique_per_workspace_and_a_kept_url_stays(owner, channels):
    with pytest.raises(ValidationError) as caught:
        services.alert_channel_create(owner=owner, data={"name": "hook", "kind": "email", "email_to": "a@b.example"})
    assert caught.value.message_dict["name"] == ["The workspace already has a channel named 'hook'."]
    updated = services.alert_channel_update(channel=channels[1], data={"webhook_format": "slack", "webhook_url": ""})
    assert updated.webhook_url == "http://127.0.0.1:9/hook?token=s3cr3t"
    assert AlertChannel.objects.get(pk=updated.pk).webhook_format == "slack"


def test_only_the_owners_enabled_channels_get_deliveries(owner, other, pipeline, channels):
    make_pipeline(other, name="theirs")
    services.alert_channel_create(owner=other, data={"name": "theirs", "kind": "email", "email_to": "x@y.example"})
    services.alert_channel_update(channel=channels[0], data={"enabled": False})
    fail(pipeline)
    services.alerts_evaluate()
    assert list(AlertDelivery.objects.values_list("channel_name", flat=True)) == ["hook"]


def test_rule_parameters_are_checked(pipeline):
    with pytest.raises(ValidationError) as caught:
        services.alert_rule_update(rule=rule(pipeline, "dead_letter_rate"), data={"threshold": 150, "minutes": 0})
    assert caught.value.message_dict == {
        "threshold": ["A percentage: at most 100."],
        "minutes": ["At least 1 minute."],
    }
    assert rule(pipeline, "dead_letter_rate").threshold == 1.0
