"""Alerts: channels (where to send), rules (what to watch, per pipeline), incidents (a condition that held),
notifications (fired / re-notified / resolved) and deliveries (one notification on one channel).

A rule's `state` changes only by compare-and-set (`AlertRule.objects.filter(pk=..., state=old).update(...)`),
so two evaluation workers never both fire the same incident (`webapp.alerts.services`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import models
from django.utils import timezone

from webapp.core.fields import EncryptedTextField
from webapp.core.models import TimeStampedModel


class ChannelKind(models.TextChoices):
    EMAIL = "email", "Email"
    WEBHOOK = "webhook", "Webhook"


class WebhookFormat(models.TextChoices):
    JSON = "json", "JSON (ClearFlow's body)"
    SLACK = "slack", 'Slack-compatible ({"text": ...})'


class AlertChannel(TimeStampedModel):
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="alert_channels")
    # Who created it; access is by workspace membership (webapp.workspaces.policy).
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="alert_channels")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=ChannelKind.choices)
    enabled = models.BooleanField(default=True)
    # Email: comma-separated addresses.
    email_to = models.CharField(max_length=1000, blank=True, default="")
    # Webhook: the whole URL is a secret (Slack and most chat tools put the credential in the path).
    webhook_url = EncryptedTextField(blank=True, default="")
    webhook_format = models.CharField(max_length=10, choices=WebhookFormat.choices, default=WebhookFormat.JSON)

    EDITABLE_FIELDS = ("name", "kind", "enabled", "email_to", "webhook_url", "webhook_format")
    SECRET_FIELDS = ("webhook_url",)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="alert_channel_unique_name_per_workspace")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_webhook_url(self) -> bool:
        return bool(self.webhook_url)

    @property
    def masked_webhook_url(self) -> str:
        """Scheme and host only (the path and query usually hold the credential)."""
        return mask_url(self.webhook_url)

    @property
    def target(self) -> str:
        """What the pages and the API show of where this channel sends."""
        return self.email_to if self.kind == ChannelKind.EMAIL else self.masked_webhook_url

    @property
    def recipients(self) -> list[str]:
        return [address.strip() for address in self.email_to.split(",") if address.strip()]


def mask_url(url: str) -> str:
    if not url:
        return ""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:  # a port that is not a number: show nothing of it
        return "••••••"
    if not host:
        return "••••••"
    return f"{parts.scheme}://{host}{f':{port}' if port else ''}/••••••"


class RuleKind(models.TextChoices):
    DUPLICATES = "duplicates", "Duplicates found by the audit"
    DEAD_LETTER_RATE = "dead_letter_rate", "Dead-letter rate over a threshold"
    CONSUMER_LAG = "consumer_lag", "Consumer lag over a threshold"
    PIPELINE_FAILED = "pipeline_failed", "Pipeline failed"
    NO_EVENTS = "no_events", "No events"
    BEHIND = "behind", "Falling behind"


class RuleState(models.TextChoices):
    OK = "ok", "OK"
    PENDING = "pending", "Pending"  # the condition holds, but not yet for the rule's minutes (consumer lag)
    FIRING = "firing", "Firing"


class AlertRule(TimeStampedModel):
    """One condition watched on one pipeline. `threshold` and `minutes` mean what `RULE_PARAMS` says per kind."""

    pipeline = models.ForeignKey("pipelines.Pipeline", on_delete=models.CASCADE, related_name="alert_rules")
    kind = models.CharField(max_length=20, choices=RuleKind.choices)
    enabled = models.BooleanField(default=True)
    threshold = models.FloatField(default=0)
    minutes = models.PositiveIntegerField(default=0)
    # While the incident lasts, notify again every this many minutes (0: only when it starts and ends).
    renotify_minutes = models.PositiveIntegerField(default=60)
    # Evaluation state (written by the evaluation service only, compare-and-set).
    state = models.CharField(max_length=10, choices=RuleState.choices, default=RuleState.OK)
    state_since = models.DateTimeField(default=timezone.now)
    last_value = models.FloatField(null=True, blank=True)
    last_evaluated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pipeline_id", "kind"]
        constraints = [models.UniqueConstraint(fields=["pipeline", "kind"], name="alert_rule_one_per_kind")]

    def __str__(self) -> str:
        return f"{self.pipeline_id}: {self.kind}"


class AlertIncident(models.Model):
    """A rule's condition held from `started_at` until `resolved_at` (null while it lasts)."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="incidents")
    pipeline = models.ForeignKey("pipelines.Pipeline", on_delete=models.CASCADE, related_name="alert_incidents")
    kind = models.CharField(max_length=20, choices=RuleKind.choices)
    started_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    last_notified_at = models.DateTimeField(default=timezone.now)
    summary = models.TextField(blank=True, default="")
    value = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["rule"], condition=models.Q(resolved_at__isnull=True), name="alert_one_open_incident_per_rule"
            )
        ]
        indexes = [models.Index(fields=["pipeline", "-started_at"], name="alert_incident_recent")]

    def __str__(self) -> str:
        return f"{self.pipeline_id} {self.kind} {self.started_at:%Y-%m-%d %H:%M}"

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None


class NotificationEvent(models.TextChoices):
    FIRING = "firing", "Firing"
    RENOTIFY = "renotify", "Still firing"
    RESOLVED = "resolved", "Resolved"


class AlertNotification(models.Model):
    incident = models.ForeignKey(AlertIncident, on_delete=models.CASCADE, related_name="notifications")
    event = models.CharField(max_length=10, choices=NotificationEvent.choices)
    created_at = models.DateTimeField(default=timezone.now)
    message = models.TextField()

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.incident_id} {self.event}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RETRYING = "retrying", "Retrying"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


class AlertDelivery(models.Model):
    """One notification on one channel: sent by its own Celery task, so a failing channel blocks no other."""

    notification = models.ForeignKey(AlertNotification, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.ForeignKey(AlertChannel, on_delete=models.SET_NULL, null=True, related_name="deliveries")
    channel_name = models.CharField(max_length=100)
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["notification", "channel"], name="alert_delivery_once_per_channel")
        ]

    def __str__(self) -> str:
        return f"{self.notification_id} -> {self.channel_name}: {self.status}"
