"""Admin for connections: secrets are never shown. Their inputs start empty; leaving one empty keeps the
stored secret, ticking "clear" removes it."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters

from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection
from webapp.workspaces.admin import WorkspaceScopedAdmin


class SecretFieldsForm(forms.ModelForm):
    """Every field of the model's `EDITABLE_FIELDS`; each of its `SECRET_FIELDS` as an empty password input
    with a "clear" box beside it (`clear_<name>`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in self._meta.model.SECRET_FIELDS:
            stored = bool(self.instance.pk and getattr(self.instance, name))
            label = self.instance._meta.get_field(name).verbose_name
            self.fields[name] = forms.CharField(
                label=label.capitalize(),
                required=False,
                strip=False,
                widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
                help_text="Set — leave empty to keep it." if stored else "Not set.",
            )
            self.fields[f"clear_{name}"] = forms.BooleanField(required=False, label=f"Clear the stored {label}")
            self.initial[name] = ""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        for name in self._meta.model.SECRET_FIELDS:
            if cleaned.get(f"clear_{name}"):
                cleaned[name] = ""
            elif not cleaned.get(name) and self.instance.pk:
                cleaned[name] = getattr(type(self.instance).objects.get(pk=self.instance.pk), name)
            setattr(self.instance, name, cleaned.get(name, ""))
        return cleaned


class KafkaConnectionForm(SecretFieldsForm):
    class Meta:
        model = KafkaConnection
        fields = ("workspace", "owner", *KafkaConnection.EDITABLE_FIELDS)


class ClickHouseConnectionForm(SecretFieldsForm):
    class Meta:
        model = ClickHouseConnection
        fields = ("workspace", "owner", *ClickHouseConnection.EDITABLE_FIELDS)


class SchemaRegistryConnectionForm(SecretFieldsForm):
    class Meta:
        model = SchemaRegistryConnection
        fields = ("workspace", "owner", *SchemaRegistryConnection.EDITABLE_FIELDS)


# The default and the last test, as the connections page shows them; the tests' outcome is written by a test only.
LISTED_STATE = ("is_default", "last_tested_at", "last_test_ok")
READ_ONLY = ("created_at", "updated_at", *(name for name in KafkaConnection.STATE_FIELDS if name != "is_default"))


class SecretsAdmin(WorkspaceScopedAdmin):
    """Keeps the secrets out of Django's error reports (they would otherwise list the POST data)."""

    @method_decorator(
        sensitive_post_parameters(
            *KafkaConnection.SECRET_FIELDS, *ClickHouseConnection.SECRET_FIELDS, *SchemaRegistryConnection.SECRET_FIELDS
        )
    )
    def changeform_view(self, *args: Any, **kwargs: Any) -> Any:
        return super().changeform_view(*args, **kwargs)


@admin.register(KafkaConnection)
class KafkaConnectionAdmin(SecretsAdmin):
    form = KafkaConnectionForm
    list_display = (
        "name",
        "workspace",
        "owner",
        "bootstrap_servers",
        "security_protocol",
        "sasl_password_set",
        *LISTED_STATE,
        "updated_at",
    )
    list_filter = ("security_protocol",)
    search_fields = ("name", "bootstrap_servers", "owner__username", "workspace__name")
    list_select_related = ("owner", "workspace")
    readonly_fields = READ_ONLY

    @admin.display(boolean=True, description="SASL password")
    def sasl_password_set(self, obj: KafkaConnection) -> bool:
        return obj.has_sasl_password


@admin.register(ClickHouseConnection)
class ClickHouseConnectionAdmin(SecretsAdmin):
    form = ClickHouseConnectionForm
    list_display = (
        "name",
        "workspace",
        "owner",
        "host",
        "port",
        "secure",
        "username",
        "password_set",
        *LISTED_STATE,
        "updated_at",
    )
    list_filter = ("secure",)
    search_fields = ("name", "host", "owner__username", "workspace__name")
    list_select_related = ("owner", "workspace")
    readonly_fields = READ_ONLY

    @admin.display(boolean=True, description="password")
    def password_set(self, obj: ClickHouseConnection) -> bool:
        return obj.has_password


@admin.register(SchemaRegistryConnection)
class SchemaRegistryConnectionAdmin(SecretsAdmin):
    form = SchemaRegistryConnectionForm
    list_display = (
        "name",
        "workspace",
        "owner",
        "url",
        "username",
        "password_set",
        *LISTED_STATE,
        "updated_at",
    )
    search_fields = ("name", "url", "owner__username", "workspace__name")
    list_select_related = ("owner", "workspace")
    readonly_fields = READ_ONLY

    @admin.display(boolean=True, description="password")
    def password_set(self, obj: SchemaRegistryConnection) -> bool:
        return obj.has_password
