"""Reads of alerts. `*_get` raise Http404 for missing objects and for other workspaces' (the same answer)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from webapp.alerts.models import AlertChannel, AlertDelivery, AlertIncident, AlertNotification, AlertRule, RuleState
from webapp.pipelines.models import Pipeline
from webapp.workspaces.models import Workspace
from webapp.workspaces.policy import visible_workspaces


def _pk(value: Any, what: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise Http404(f"No such {what}.") from None


def alert_channel_list(*, user: AbstractBaseUser, workspace: Workspace | None = None) -> QuerySet[AlertChannel]:
    """The alert channels of the user's workspaces (only `workspace`'s, when given)."""
    channels = AlertChannel.objects.filter(workspace__in=visible_workspaces(user))
    if workspace is not None:
        channels = channels.filter(workspace=workspace)
    return channels.order_by("name", "id")


def alert_channel_get(*, user: AbstractBaseUser, pk: Any) -> AlertChannel:
    return get_object_or_404(alert_channel_list(user=user), pk=_pk(pk, "channel"))


def alert_rule_list(*, pipeline: Pipeline) -> QuerySet[AlertRule]:
    """The pipeline's rules (the pipeline comes from `pipeline_get`, which checked its workspace)."""
    return AlertRule.objects.filter(pipeline=pipeline).select_related("pipeline").order_by("id")


def alert_rule_get(*, pipeline: Pipeline, kind: str) -> AlertRule:
    return get_object_or_404(alert_rule_list(pipeline=pipeline), kind=kind)


def alert_incident_list(
    *,
    user: AbstractBaseUser,
    pipeline: Pipeline | None = None,
    open_only: bool = False,
    workspace: Workspace | None = None,
) -> QuerySet[AlertIncident]:
    """The incidents of the user's workspaces' pipelines, newest first, with their notifications and deliveries
    loaded."""
    incidents = AlertIncident.objects.filter(pipeline__workspace__in=visible_workspaces(user))
    if workspace is not None:
        incidents = incidents.filter(pipeline__workspace=workspace)
    if pipeline is not None:
        incidents = incidents.filter(pipeline=pipeline)
    if open_only:
        incidents = incidents.filter(resolved_at__isnull=True)
    notifications = AlertNotification.objects.order_by("created_at", "id").prefetch_related(
        Prefetch("deliveries", queryset=AlertDelivery.objects.order_by("id"))
    )
    return (
        incidents.select_related("pipeline")
        .prefetch_related(Prefetch("notifications", queryset=notifications))
        .order_by("-started_at", "-id")
    )


def alert_incident_get(*, user: AbstractBaseUser, pk: Any) -> AlertIncident:
    return get_object_or_404(alert_incident_list(user=user), pk=_pk(pk, "incident"))


def alert_firing_list() -> QuerySet[AlertRule]:
    """Every firing rule (of everyone), for the operator's `/metrics`."""
    return AlertRule.objects.filter(state=RuleState.FIRING).order_by("pipeline_id", "kind")
