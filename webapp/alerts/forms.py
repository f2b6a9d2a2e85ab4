"""Forms of the alert pages: they turn the POST into the services' `data`; the services do the checking."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from webapp.alerts.models import ChannelKind, WebhookFormat


class ChannelForm(forms.Form):
    name = forms.CharField(max_length=100)
    kind = forms.ChoiceField(choices=ChannelKind.choices)
    enabled = forms.BooleanField(required=False, initial=True, label="Enabled")
    email_to = forms.CharField(
        max_length=1000, required=False, label="Email addresses", help_text="For email: separated by commas."
    )
    webhook_url = forms.CharField(
        max_length=2000,
        required=False,
        label="Webhook URL",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="For a webhook: stored encrypted and never shown again. Leave empty to keep the saved one.",
    )
    webhook_format = forms.ChoiceField(choices=WebhookFormat.choices, initial=WebhookFormat.JSON, label="Body")


class RuleForm(forms.Form):
    enabled = forms.BooleanField(required=False, label="On")
    threshold = forms.FloatField(required=False, min_value=0)
    minutes = forms.IntegerField(required=False, min_value=0, max_value=10080)
    renotify_minutes = forms.IntegerField(min_value=0, max_value=10080, label="Notify again every (minutes, 0: never)")


def add_service_errors(form: forms.Form, exc: ValidationError) -> None:
    """A service's ValidationError (keyed by field) shown next to the form's fields."""
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc)
        return
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)
