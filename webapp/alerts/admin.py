"""Admin for alerts: channels (the webhook URL is write-only: masked, and replaced only when a new one is typed),
rules (parameters editable, state read-only), and the incident history with its notifications and deliveries."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from webapp.alerts import services
from webapp.alerts.models import AlertChannel, AlertDelivery, AlertIncident, AlertNotification, AlertRule
from webapp.workspaces.admin import WorkspaceScopedAdmin


class AlertChannelForm(forms.ModelForm):
    webhook_url = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted, never shown; leave empty to keep the saved URL.",
    )

    class Meta:
        model = AlertChannel
        fields = ("workspace", "owner", "name", "kind", "enabled", "email_to", "webhook_url", "webhook_format")

    def clean(self) -> dict[str, Any]:
        # The services' checks (addresses, URL, network guard, name), shown next to the fields.
        data = super().clean()
        workspace = data.get("workspace")
        if workspace is not None and not self.errors:
            values = {key: data.get(key) for key in AlertChannel.EDITABLE_FIELDS}
            try:
                services.alert_channel_check(
                    workspace=workspace, data=values, channel=self.instance if self.instance.pk else None
                )
            except ValidationError as exc:
                for field, messages in exc.message_dict.items():
                    self.add_error(field if field in self.fields else None, messages)
        return data


@admin.register(AlertChannel)
class AlertChannelAdmin(WorkspaceScopedAdmin):
    form = AlertChannelForm
    change_action = "alert.edit"
    list_display = ("name", "workspace", "owner", "kind", "target", "enabled", "updated_at")
    list_filter = ("kind", "enabled", "workspace")
    search_fields = ("name", "owner__username", "workspace__name")
    readonly_fields = ("masked_webhook_url", "created_at", "updated_at")

    def save_model(self, request: HttpRequest, obj: AlertChannel, form: Any, change: bool) -> None:
        # Through the services (checked already in the form's clean): an empty URL keeps the stored one.
        data = {key: form.cleaned_data.get(key) for key in AlertChannel.EDITABLE_FIELDS}
        if change:
            services.alert_channel_update(channel=AlertChannel.objects.get(pk=obj.pk), data=data, actor=request.user)
        else:
            obj.pk = services.alert_channel_create(
                owner=form.cleaned_data["owner"], data=data, workspace=form.cleaned_data["workspace"]
            ).pk


class AlertRuleForm(forms.ModelForm):
    class Meta:
        model = AlertRule
        fields = ("enabled", "threshold", "minutes", "renotify_minutes")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not self.errors:
            try:
                services.alert_rule_check(rule=AlertRule.objects.get(pk=self.instance.pk), data=data)
            except ValidationError as exc:
                for field, messages in exc.message_dict.items():
                    self.add_error(field, messages)
        return data


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    form = AlertRuleForm
    list_display = ("pipeline", "kind", "enabled", "threshold", "minutes", "renotify_minutes", "state", "state_since")
    list_filter = ("kind", "enabled", "state")
    search_fields = ("pipeline__name", "pipeline__owner__username")
    list_select_related = ("pipeline",)
    fields = ("pipeline", "kind", "enabled", "threshold", "minutes", "renotify_minutes", "state", "state_since",
              "last_value", "last_evaluated_at")  # fmt: skip
    readonly_fields = ("pipeline", "kind", "state", "state_since", "last_value", "last_evaluated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # every pipeline gets one rule of each kind when it is created

    def save_model(self, request: HttpRequest, obj: AlertRule, form: Any, change: bool) -> None:
        data = {key: form.cleaned_data.get(key) for key in services.RULE_FIELDS if key in form.cleaned_data}
        services.alert_rule_update(rule=AlertRule.objects.get(pk=obj.pk), data=data, actor=request.user)


class AlertDeliveryInline(admin.TabularInline):
    model = AlertDelivery
    extra = 0
    max_num = 0
    can_delete = False
    fields = ("channel_name", "status", "attempts", "last_error", "sent_at")
    readonly_fields = fields


@admin.register(AlertNotification)
class AlertNotificationAdmin(admin.ModelAdmin):
    list_display = ("incident", "event", "created_at")
    list_filter = ("event",)
    fields = ("incident", "event", "created_at", "message")
    readonly_fields = fields
    inlines = [AlertDeliveryInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class AlertNotificationInline(admin.TabularInline):
    model = AlertNotification
    extra = 0
    max_num = 0
    can_delete = False
    fields = ("event", "created_at", "message")
    readonly_fields = fields
    show_change_link = True


@admin.register(AlertIncident)
class AlertIncidentAdmin(admin.ModelAdmin):
    list_display = ("pipeline", "kind", "started_at", "resolved_at", "summary")
    list_filter = ("kind",)
    search_fields = ("pipeline__name", "pipeline__owner__username")
    list_select_related = ("pipeline",)
    fields = ("pipeline", "rule", "kind", "started_at", "resolved_at", "last_notified_at", "summary", "value")
    readonly_fields = fields
    inlines = [AlertNotificationInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
