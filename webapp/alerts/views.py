"""The alert pages: channels, a pipeline's rules (with its incidents), and the history of every incident.
Plain function views: each reads through a selector or calls one service; someone else's object is a 404."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from webapp.alerts import selectors, services
from webapp.alerts.conditions import RULE_PARAMS
from webapp.alerts.forms import ChannelForm, RuleForm, add_service_errors
from webapp.alerts.models import AlertChannel, AlertRule, RuleKind, RuleState
from webapp.pipelines import selectors as pipeline_selectors
from webapp.workspaces import policy
from webapp.workspaces.current import current_workspace

HISTORY_LIMIT = 100


def _channel_data(form: ChannelForm) -> dict[str, Any]:
    data = dict(form.cleaned_data)
    if not data.get("webhook_url"):
        data.pop("webhook_url", None)  # empty: keep the stored URL (it is never sent back to the browser)
    return data


def _back_url(request: HttpRequest) -> str:
    """Where the page was opened from (`?next=`, a path of this site), to go back to once a channel is added."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return ""


@login_required
@require_http_methods(["GET", "POST"])
def channel_list(request: HttpRequest) -> HttpResponse:
    form = ChannelForm(request.POST or None)
    back = _back_url(request)
    workspace = current_workspace(request)
    if request.method == "POST":
        policy.require(request.user, "alert.edit", workspace)
    if request.method == "POST" and form.is_valid():
        try:
            channel = services.alert_channel_create(owner=request.user, data=_channel_data(form), workspace=workspace)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Channel {channel.name} added.")
            return redirect(back or "alerts:channels")
    return render(
        request,
        "alerts/channel_list.html",
        {
            "channels": selectors.alert_channel_list(user=request.user, workspace=workspace),
            "form": form,
            "back": back,
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def channel_edit(request: HttpRequest, pk: int) -> HttpResponse:
    channel = selectors.alert_channel_get(user=request.user, pk=pk)
    if request.method == "POST":
        policy.require(request.user, "alert.edit", channel.workspace_id)
        form = ChannelForm(request.POST)
        if form.is_valid():
            try:
                services.alert_channel_update(channel=channel, data=_channel_data(form), actor=request.user)
            except ValidationError as exc:
                add_service_errors(form, exc)
                channel.refresh_from_db()
            else:
                messages.success(request, f"Channel {channel.name} saved.")
                return redirect("alerts:channels")
    else:
        form = ChannelForm(initial=_channel_initial(channel))
    return render(request, "alerts/channel_edit.html", {"channel": channel, "form": form})


def _channel_initial(channel: AlertChannel) -> dict[str, Any]:
    return {
        "name": channel.name,
        "kind": channel.kind,
        "enabled": channel.enabled,
        "email_to": channel.email_to,
        "webhook_format": channel.webhook_format,
    }


@login_required
@require_POST
def channel_delete(request: HttpRequest, pk: int) -> HttpResponse:
    channel = selectors.alert_channel_get(user=request.user, pk=pk)
    policy.require(request.user, "alert.edit", channel.workspace_id)
    services.alert_channel_delete(channel=channel, actor=request.user)
    messages.success(request, f"Channel {channel.name} deleted.")
    return redirect("alerts:channels")


def _rule_rows(rules: list[AlertRule], request: HttpRequest, posted_kind: str | None) -> list[dict[str, Any]]:
    rows = []
    for rule in rules:
        if posted_kind == rule.kind:
            form = RuleForm(request.POST, prefix=rule.kind)
        else:
            form = RuleForm(
                prefix=rule.kind,
                initial={
                    "enabled": rule.enabled,
                    "threshold": int(rule.threshold) if float(rule.threshold).is_integer() else rule.threshold,
                    "minutes": rule.minutes,
                    "renotify_minutes": rule.renotify_minutes,
                },
            )
        params = RULE_PARAMS[rule.kind]
        form.fields["threshold"].label = params.threshold_label or "Threshold"
        form.fields["minutes"].label = params.minutes_label or "Minutes"
        for name in ("threshold", "minutes"):
            form.fields[name].optional_hint = False  # shown only where the rule uses it, and then it is set
        rows.append({"rule": rule, "title": RuleKind(rule.kind).label, "params": params, "form": form})
    return rows


@login_required
@require_http_methods(["GET", "POST"])
def pipeline_rules(request: HttpRequest, pk: int) -> HttpResponse:
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    rules = list(selectors.alert_rule_list(pipeline=pipeline))
    posted_kind = request.POST.get("kind") if request.method == "POST" else None
    if request.method == "POST":
        policy.require(request.user, "alert.edit", pipeline.workspace_id)
    rows = _rule_rows(rules, request, posted_kind)
    for row in rows:
        form = row["form"]
        if row["rule"].kind != posted_kind or not form.is_valid():
            continue
        data = {key: value for key, value in form.cleaned_data.items() if value is not None}
        try:
            services.alert_rule_update(rule=row["rule"], data=data, actor=request.user)
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Alert rule “{row['title']}” saved.")
            return redirect("alerts:pipeline_rules", pk=pipeline.pk)
    return render(
        request,
        "alerts/pipeline_rules.html",
        {
            "pipeline": pipeline,
            "rows": rows,
            "channels": selectors.alert_channel_list(user=request.user, workspace=pipeline.workspace).filter(
                enabled=True
            ),
            "incidents": selectors.alert_incident_list(user=request.user, pipeline=pipeline)[:HISTORY_LIMIT],
        },
    )


@login_required
@require_GET
def pipeline_alert_summary(request: HttpRequest, pk: int) -> HttpResponse:
    """The small alerts card on the pipeline page (loaded with htmx): firing rules and a link to the rules."""
    pipeline = pipeline_selectors.pipeline_get(user=request.user, pk=pk)
    rules = selectors.alert_rule_list(pipeline=pipeline)
    return render(
        request,
        "alerts/partials/pipeline_summary.html",
        {
            "pipeline": pipeline,
            "firing": [r for r in rules if r.state == RuleState.FIRING],
            "enabled": sum(1 for r in rules if r.enabled),
            "channels": list(
                selectors.alert_channel_list(user=request.user, workspace=pipeline.workspace).filter(enabled=True)
            ),
        },
    )


@login_required
@require_GET
def incident_history(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "alerts/history.html",
        {
            "incidents": selectors.alert_incident_list(user=request.user, workspace=current_workspace(request))[
                :HISTORY_LIMIT
            ],
            "limit": HISTORY_LIMIT,
        },
    )
