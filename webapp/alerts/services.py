"""Writes of alerts (HackSoft services: keyword-only, typed, atomic): channels, rules, the evaluation that
fires / re-notifies / resolves incidents, and the sending of one delivery.

State changes are compare-and-set: a rule moves ok -> pending -> firing -> ok only through
`AlertRule.objects.filter(pk=..., state=<what we read>).update(...)`, and a re-notification only through
`AlertIncident.objects.filter(pk=..., last_notified_at=<what we read>).update(...)`. Two workers evaluating at
once (two beat ticks overlapping, two workers) therefore never both fire or both re-notify; the partial unique
constraint "one open incident per rule" backs that up in the database.

Each notification becomes one `AlertDelivery` per enabled channel of the pipeline's workspace, enqueued on commit as
its own Celery task (`worker.tasks.alert_deliver`), so a failing channel never holds up another.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator, validate_email
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from webapp.activity.services import activity_record, changed, secret_changes, snapshot
from webapp.alerts import transports
from webapp.alerts.conditions import RULE_PARAMS, Condition, conditions_for, hold_seconds
from webapp.alerts.errors import DeliveryError
from webapp.alerts.models import (
    AlertChannel,
    AlertDelivery,
    AlertIncident,
    AlertNotification,
    AlertRule,
    ChannelKind,
    DeliveryStatus,
    NotificationEvent,
    RuleKind,
    RuleState,
)
from webapp.connections.network_guard import host_error
from webapp.core import queue
from webapp.pipelines.models import Pipeline
from webapp.workspaces.models import Workspace
from webapp.workspaces.services import workspace_for_new_objects

logger = logging.getLogger(__name__)

MAX_RECIPIENTS = 20
CHANNEL_FIELDS = AlertChannel.EDITABLE_FIELDS
RULE_FIELDS = ("enabled", "threshold", "minutes", "renotify_minutes")
MAX_MINUTES = 7 * 24 * 60

# -- channels ---------------------------------------------------------------------------------------------


def _clean_channel(channel: AlertChannel) -> None:
    errors: dict[str, str] = {}
    if channel.kind == ChannelKind.EMAIL:
        recipients = channel.recipients
        if not recipients:
            errors["email_to"] = "Give at least one email address."
        elif len(recipients) > MAX_RECIPIENTS:
            errors["email_to"] = f"At most {MAX_RECIPIENTS} addresses."
        for address in recipients:
            try:
                validate_email(address)
            except ValidationError:
                errors["email_to"] = f"{address!r} is not an email address."
                break
        channel.email_to = ", ".join(recipients)
        channel.webhook_url = ""
    elif channel.kind == ChannelKind.WEBHOOK:
        errors.update(_webhook_url_errors(channel.webhook_url))
        channel.email_to = ""
    try:
        channel.full_clean(exclude=["owner", "workspace"], validate_constraints=False)
    except ValidationError as exc:
        for field, messages in exc.message_dict.items():
            errors.setdefault(field, messages[0])
    if errors:
        raise ValidationError(errors)


def _webhook_url_errors(url: str) -> dict[str, str]:
    # The messages never repeat the URL: it is a secret.
    if not url:
        return {"webhook_url": "Give the webhook's URL."}
    if len(url) > 2000:
        return {"webhook_url": "The URL is longer than 2000 characters."}
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        return {"webhook_url": "Not a valid http:// or https:// URL."}
    if problem := host_error(urlsplit(url).hostname or ""):
        return {"webhook_url": problem}
    return {}


def _check_name(*, workspace_id: int, name: str, exclude_pk: int | None) -> None:
    others = AlertChannel.objects.filter(workspace_id=workspace_id, name=name)
    if exclude_pk is not None:
        others = others.exclude(pk=exclude_pk)
    if others.exists():
        raise ValidationError({"name": f"The workspace already has a channel named {name!r}."})


def _channel_snapshot(channel: AlertChannel) -> dict[str, Any]:
    return snapshot(channel, AlertChannel.EDITABLE_FIELDS, AlertChannel.SECRET_FIELDS)


def _save_channel(channel: AlertChannel) -> AlertChannel:
    try:
        with transaction.atomic():
            channel.save()
    except IntegrityError:  # a concurrent request took the name
        raise ValidationError({"name": f"The workspace already has a channel named {channel.name!r}."}) from None
    return channel


def _apply(channel: AlertChannel, data: Mapping[str, Any]) -> AlertChannel:
    for key in CHANNEL_FIELDS:
        if key not in data or data[key] is None:
            continue
        if key in AlertChannel.SECRET_FIELDS and data[key] == "":
            continue  # absent, None or "": keep the stored secret
        setattr(channel, key, data[key])
    return channel


def alert_channel_check(*, workspace: Workspace, data: Mapping[str, Any], channel: AlertChannel | None = None) -> None:
    """The checks of create / update without saving (the admin's form runs them). ValidationError by field."""
    candidate = AlertChannel(workspace=workspace) if channel is None else AlertChannel.objects.get(pk=channel.pk)
    _clean_channel(_apply(candidate, data))
    _check_name(workspace_id=workspace.pk, name=candidate.name, exclude_pk=candidate.pk)


@transaction.atomic
def alert_channel_create(
    *, owner: AbstractBaseUser, data: Mapping[str, Any], workspace: Workspace | None = None
) -> AlertChannel:
    """A new channel in `workspace` (the owner's default one when None). `data`: name, kind (email|webhook),
    enabled, email_to, webhook_url, webhook_format."""
    workspace = workspace_for_new_objects(user=owner, workspace=workspace)
    channel = _apply(AlertChannel(owner=owner, workspace=workspace), data)
    _clean_channel(channel)
    _check_name(workspace_id=workspace.pk, name=channel.name, exclude_pk=None)
    channel = _save_channel(channel)
    activity_record(actor=owner, action="alert_channel.create", target=channel, after=_channel_snapshot(channel))
    return channel


@transaction.atomic
def alert_channel_update(*, channel: AlertChannel, data: Mapping[str, Any], actor: Any = None) -> AlertChannel:
    """Only keys present change; `webhook_url` absent, None or "" keeps the stored URL (it is never shown)."""
    before = _channel_snapshot(AlertChannel.objects.get(pk=channel.pk))
    old_url = AlertChannel.objects.get(pk=channel.pk).webhook_url
    _apply(channel, data)
    _clean_channel(channel)
    _check_name(workspace_id=channel.workspace_id, name=channel.name, exclude_pk=channel.pk)
    channel = _save_channel(channel)
    old, new = changed(before, _channel_snapshot(channel))
    if channel.webhook_url and old_url and channel.webhook_url != old_url:
        replaced_before, replaced_after = secret_changes(["webhook_url"])
        old, new = {**old, **replaced_before}, {**new, **replaced_after}
    if new:
        activity_record(actor=actor, action="alert_channel.edit", target=channel, before=old, after=new)
    return channel


@transaction.atomic
def alert_channel_delete(*, channel: AlertChannel, actor: Any = None) -> None:
    """Past deliveries keep the channel's name; pending ones find no channel and are recorded as failed."""
    activity_record(actor=actor, action="alert_channel.delete", target=channel, before=_channel_snapshot(channel))
    channel.delete()


# -- rules ------------------------------------------------------------------------------------------------


@transaction.atomic
def alert_rules_create_defaults(*, pipeline: Pipeline) -> list[AlertRule]:
    """One rule of each kind with its default parameters (on `pipelines.hooks.pipeline_created`); existing ones stay."""
    AlertRule.objects.bulk_create(
        [
            AlertRule(
                pipeline=pipeline,
                kind=kind,
                threshold=params.threshold,
                minutes=params.minutes,
                renotify_minutes=params.renotify_minutes,
            )
            for kind, params in RULE_PARAMS.items()
        ],
        ignore_conflicts=True,
    )
    return list(AlertRule.objects.filter(pipeline=pipeline))


def _rule_errors(*, kind: str, threshold: float, minutes: int, renotify_minutes: int) -> dict[str, str]:
    errors: dict[str, str] = {}
    if threshold < 0:
        errors["threshold"] = "Must be 0 or more."
    elif kind == RuleKind.DEAD_LETTER_RATE and threshold > 100:
        errors["threshold"] = "A percentage: at most 100."
    if RULE_PARAMS[kind].minutes_label and minutes < 1:
        errors["minutes"] = "At least 1 minute."
    elif minutes > MAX_MINUTES:
        errors["minutes"] = "At most a week (10080 minutes)."
    if renotify_minutes < 0 or renotify_minutes > MAX_MINUTES:
        errors["renotify_minutes"] = "Between 0 and a week (10080 minutes)."
    return errors


def alert_rule_check(*, rule: AlertRule, data: Mapping[str, Any]) -> dict[str, Any]:
    """The rule's fields after `data` is applied (the rule itself is left as it is); ValidationError by field."""
    values = {key: getattr(rule, key) for key in RULE_FIELDS}
    values.update({key: data[key] for key in RULE_FIELDS if data.get(key) is not None})
    if errors := _rule_errors(
        kind=rule.kind,
        threshold=values["threshold"],
        minutes=values["minutes"],
        renotify_minutes=values["renotify_minutes"],
    ):
        raise ValidationError(errors)
    return values


@transaction.atomic
def alert_rule_update(*, rule: AlertRule, data: Mapping[str, Any], actor: Any = None) -> AlertRule:
    """Change enabled / threshold / minutes / renotify_minutes. Turning a firing rule off resolves its
    incident at the next evaluation (with a "resolved" notification)."""
    before = snapshot(rule, RULE_FIELDS)
    for key, value in alert_rule_check(rule=rule, data=data).items():
        setattr(rule, key, value)
    rule.full_clean(exclude=["pipeline"], validate_constraints=False)
    rule.save(update_fields=[*RULE_FIELDS, "updated_at"])
    old, new = changed(before, snapshot(rule, RULE_FIELDS))
    if new:
        activity_record(
            actor=actor,
            action="alert_rule.edit",
            workspace=rule.pipeline.workspace,
            target=rule,
            object_name=f"{rule.pipeline.name}: {rule.kind}",
            before=old,
            after=new,
        )
    return rule


# -- evaluation -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvaluationResult:
    rules: int = 0
    fired: int = 0
    renotified: int = 0
    resolved: int = 0


def alerts_evaluate(*, now: datetime | None = None) -> EvaluationResult:
    """One pass over every enabled rule (and every disabled one still firing or pending, to close it)."""
    now = now or timezone.now()
    rules = list(
        AlertRule.objects.filter(Q(enabled=True) | ~Q(state=RuleState.OK)).select_related("pipeline", "pipeline__owner")
    )
    conditions = conditions_for([r for r in rules if r.enabled], now=now)
    _record_values(rules, conditions, now=now)
    counts = {"fired": 0, "renotified": 0, "resolved": 0}
    for rule in rules:
        condition = conditions.get(rule.pk) or Condition(active=False, summary="The rule was turned off.")
        try:
            outcome = _evaluate_rule(rule, condition, now=now)
        except Exception:  # one rule's failure (a bug, a lost row) must not stop the others
            logger.exception("alert rule %s: evaluation failed", rule.pk)
            continue
        if outcome:
            counts[outcome] += 1
    return EvaluationResult(rules=len(rules), **counts)


def _record_values(rules: list[AlertRule], conditions: dict[int, Condition], *, now: datetime) -> None:
    """When each rule was evaluated (one UPDATE) and what it measured (only the values that changed)."""
    AlertRule.objects.filter(pk__in=[r.pk for r in rules]).update(last_evaluated_at=now)
    changed = []
    for rule in rules:
        condition = conditions.get(rule.pk)
        if condition is not None and condition.active is not None and condition.value != rule.last_value:
            rule.last_value = condition.value
            changed.append(rule)
    AlertRule.objects.bulk_update(changed, ["last_value"])


def _evaluate_rule(rule: AlertRule, condition: Condition, *, now: datetime) -> str | None:
    if condition.active is None:
        return None
    if condition.active:
        if rule.state == RuleState.OK:
            if hold_seconds(rule) > 0:
                _set_state(rule, RuleState.OK, RuleState.PENDING, now=now)
                return None
            return "fired" if _fire(rule, condition, from_state=RuleState.OK, now=now) else None
        if rule.state == RuleState.PENDING:
            if (now - rule.state_since).total_seconds() >= hold_seconds(rule):
                return "fired" if _fire(rule, condition, from_state=RuleState.PENDING, now=now) else None
            return None
        return "renotified" if _renotify(rule, condition, now=now) else None
    if rule.state == RuleState.PENDING:
        _set_state(rule, RuleState.PENDING, RuleState.OK, now=now)
    elif rule.state == RuleState.FIRING:
        return "resolved" if _resolve(rule, condition, now=now) else None
    return None


def _set_state(rule: AlertRule, old: str, new: str, *, now: datetime) -> bool:
    return AlertRule.objects.filter(pk=rule.pk, state=old).update(state=new, state_since=now) == 1


@transaction.atomic
def _fire(rule: AlertRule, condition: Condition, *, from_state: str, now: datetime) -> bool:
    if not _set_state(rule, from_state, RuleState.FIRING, now=now):
        return False  # another worker changed the state first
    incident = AlertIncident.objects.create(
        rule=rule,
        pipeline=rule.pipeline,
        kind=rule.kind,
        started_at=now,
        last_notified_at=now,
        summary=condition.summary,
        value=condition.value,
    )
    _notify(incident, NotificationEvent.FIRING, _message(incident, NotificationEvent.FIRING, condition.summary, now))
    return True


@transaction.atomic
def _renotify(rule: AlertRule, condition: Condition, *, now: datetime) -> bool:
    if not rule.renotify_minutes:
        return False
    incident = AlertIncident.objects.filter(rule=rule, resolved_at__isnull=True).first()
    if incident is None or now - incident.last_notified_at < timedelta(minutes=rule.renotify_minutes):
        return False
    taken = AlertIncident.objects.filter(pk=incident.pk, last_notified_at=incident.last_notified_at).update(
        last_notified_at=now, value=condition.value
    )
    if not taken:
        return False
    text = _message(incident, NotificationEvent.RENOTIFY, condition.summary, now)
    _notify(incident, NotificationEvent.RENOTIFY, text)
    return True


@transaction.atomic
def _resolve(rule: AlertRule, condition: Condition, *, now: datetime) -> bool:
    if not _set_state(rule, RuleState.FIRING, RuleState.OK, now=now):
        return False
    incident = AlertIncident.objects.filter(rule=rule, resolved_at__isnull=True).first()
    if incident is None:
        return False
    AlertIncident.objects.filter(pk=incident.pk).update(resolved_at=now, last_notified_at=now)
    incident.resolved_at = now
    _notify(
        incident, NotificationEvent.RESOLVED, _message(incident, NotificationEvent.RESOLVED, condition.summary, now)
    )
    return True


def _message(incident: AlertIncident, event: str, summary: str, now: datetime) -> str:
    pipeline = incident.pipeline
    title = RuleKind(incident.kind).label
    if event == NotificationEvent.FIRING:
        head = f"[FIRING] {pipeline.name}: {title}"
    elif event == NotificationEvent.RENOTIFY:
        head = f"[STILL FIRING since {incident.started_at:%Y-%m-%d %H:%M} UTC] {pipeline.name}: {title}"
    else:
        lasted = _duration(now - incident.started_at)
        head = f"[RESOLVED] {pipeline.name}: {title} (lasted {lasted})"
        summary = summary or "The condition no longer holds."
    return f"{head}\n{summary}".strip()


def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _notify(incident: AlertIncident, event: str, text: str) -> AlertNotification:
    notification = AlertNotification.objects.create(incident=incident, event=event, message=text)
    channels = AlertChannel.objects.filter(workspace_id=incident.pipeline.workspace_id, enabled=True)
    deliveries = AlertDelivery.objects.bulk_create(
        [AlertDelivery(notification=notification, channel=c, channel_name=c.name) for c in channels]
    )
    for delivery in deliveries:
        transaction.on_commit(partial(queue.alert_deliver, delivery_id=delivery.pk))
    logger.info(
        "alert %s: %s %s on pipeline %s, %d deliveries",
        incident.pk, event, incident.kind, incident.pipeline_id, len(deliveries),
    )  # fmt: skip
    return notification


# -- deliveries -------------------------------------------------------------------------------------------


def notification_payload(notification: AlertNotification) -> dict[str, Any]:
    """The webhook's JSON body (docs/alerts.md)."""
    incident = notification.incident
    pipeline = incident.pipeline
    base = settings.CLEARFLOW_BASE_URL.rstrip("/")
    return {
        "event": notification.event,
        "status": "resolved" if notification.event == NotificationEvent.RESOLVED else "firing",
        "pipeline": {"id": pipeline.pk, "name": pipeline.name},
        "rule": {"kind": incident.kind, "title": RuleKind(incident.kind).label},
        "incident": {
            "id": incident.pk,
            "started_at": incident.started_at.isoformat(),
            "resolved_at": incident.resolved_at.isoformat() if incident.resolved_at else None,
        },
        "value": incident.value,
        "text": notification.message,
        "url": f"{base}{reverse('alerts:pipeline_rules', kwargs={'pk': pipeline.pk})}" if base else None,
        "sent_at": notification.created_at.isoformat(),
    }


def alert_delivery_send(*, delivery_id: int, final_attempt: bool) -> str:
    """Send one delivery; returns its status. Raises RetryableDeliveryError when a retry may help and this is not
    the last attempt (the task retries with backoff); anything else is recorded on the delivery."""
    delivery = (
        AlertDelivery.objects.select_related("channel", "notification__incident__pipeline")
        .filter(pk=delivery_id)
        .first()
    )
    if delivery is None or delivery.status in (DeliveryStatus.SENT, DeliveryStatus.FAILED):
        return delivery.status if delivery else "gone"
    AlertDelivery.objects.filter(pk=delivery.pk).update(attempts=F("attempts") + 1)
    channel = delivery.channel
    if channel is None:
        return _delivery_done(delivery, DeliveryStatus.FAILED, "The channel was deleted.")
    notification = delivery.notification
    subject = notification.message.splitlines()[0][:200]
    try:
        transports.send(channel, subject=subject, text=notification.message, payload=notification_payload(notification))
    except DeliveryError as exc:
        if exc.retryable and not final_attempt:
            AlertDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.RETRYING, last_error=exc.message)
            logger.info("alert delivery %s to channel %s: %s; retrying", delivery.pk, channel.pk, exc.message)
            raise
        logger.warning("alert delivery %s to channel %s failed: %s", delivery.pk, channel.pk, exc.message)
        return _delivery_done(delivery, DeliveryStatus.FAILED, exc.message)
    return _delivery_done(delivery, DeliveryStatus.SENT, "")


def _delivery_done(delivery: AlertDelivery, status: str, error: str) -> str:
    AlertDelivery.objects.filter(pk=delivery.pk).update(
        status=status, last_error=error, sent_at=timezone.now() if status == DeliveryStatus.SENT else None
    )
    return status
