"""The form of a connection's fields (a new one in the wizard's steps 1 and 7, an existing one on the connections
page); `ConnectionKind.test_before_saving` tests what a form describes before it is saved."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from webapp.connections.models import ClickHouseConnection, KafkaConnection, SchemaRegistryConnection

# The action of "Save anyway": save a connection whose test failed (a cluster that is down for now).
SAVE_ANYWAY = "save_anyway"


class SecretTextarea(forms.Textarea):
    """A textarea for a secret (a private key): what was typed is never sent back to the browser."""

    def format_value(self, value):
        return ""


def offer_configured_defaults(form: forms.ModelForm, defaults: dict[str, object], given: dict | None) -> None:
    """A new connection starts from the addresses the app is configured with (KAFKA_BOOTSTRAP_SERVERS,
    CLICKHOUSE_HOST/PORT/USER: what `make up` and docker-compose run); what the user typed before wins. The
    password is not offered: a secret is never sent to the browser."""
    if form.is_bound or form.instance.pk is not None:
        return
    for name, value in defaults.items():
        # form.initial also holds the model's own defaults (port 8123): only what was `given` is kept.
        if value not in (None, "") and name not in (given or {}):
            form.initial[name] = value


class KafkaConnectionForm(forms.ModelForm):
    """The fields of a new Kafka connection; the connections service validates and saves it."""

    class Meta:
        model = KafkaConnection
        fields = KafkaConnection.EDITABLE_FIELDS
        widgets = {
            "sasl_password": forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
            "ssl_ca_pem": forms.Textarea(attrs={"rows": 3, "placeholder": "-----BEGIN CERTIFICATE-----"}),
            "ssl_certificate_pem": forms.Textarea(attrs={"rows": 3, "placeholder": "-----BEGIN CERTIFICATE-----"}),
            "ssl_key_pem": SecretTextarea(attrs={"rows": 3, "placeholder": "-----BEGIN PRIVATE KEY-----"}),
            "sasl_kerberos_keytab": SecretTextarea(attrs={"rows": 2, "placeholder": "BQIAAAB..."}),
            "sasl_kerberos_krb5_conf": forms.Textarea(attrs={"rows": 3, "placeholder": "[libdefaults] ..."}),
            "sasl_oauthbearer_client_secret": forms.PasswordInput(
                render_value=False, attrs={"autocomplete": "new-password"}
            ),
            "aws_secret_access_key": forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        }
        labels = {
            "sasl_mechanism": "SASL mechanism",
            "sasl_username": "SASL user name",
            "sasl_password": "SASL password",
        }
        help_texts = {
            "bootstrap_servers": "host:port pairs separated by commas, e.g. broker1:9092,broker2:9092",
            "sasl_kerberos_keytab": "GSSAPI: the keytab file in base64 (base64 -w0 client.keytab)",
            "sasl_kerberos_krb5_conf": "GSSAPI: the whole krb5.conf, or leave empty and give the realm and its KDC",
            "sasl_kerberos_service_name": "GSSAPI: the brokers' Kerberos service name (kafka when empty)",
            "sasl_oauthbearer_extensions": "OAUTHBEARER: key=value pairs, e.g. logicalCluster=lkc-abc",
            "aws_access_key_id": "AWS_MSK_IAM: leave empty to use the worker's AWS credentials (environment, role)",
        }

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("prefix", "new")
        super().__init__(*args, **kwargs)
        offer_configured_defaults(self, {"bootstrap_servers": settings.KAFKA_BOOTSTRAP_SERVERS}, kwargs.get("initial"))
        self.fields["name"].widget.attrs["placeholder"] = "e.g. Production events"
        # Needed for SASL_* (the model says so): not marked "(optional)".
        for name in ("sasl_mechanism", "sasl_username", "sasl_password"):
            self.fields[name].optional_hint = False


class ClickHouseConnectionForm(forms.ModelForm):
    class Meta:
        model = ClickHouseConnection
        fields = ClickHouseConnection.EDITABLE_FIELDS
        widgets = {
            "password": forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
            "ssl_ca_pem": forms.Textarea(attrs={"rows": 3, "placeholder": "-----BEGIN CERTIFICATE-----"}),
        }
        labels = {"username": "User", "database": "Default database"}

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("prefix", "new")
        super().__init__(*args, **kwargs)
        offer_configured_defaults(
            self,
            {
                "host": settings.CLICKHOUSE_HOST,
                "port": settings.CLICKHOUSE_PORT,
                "username": settings.CLICKHOUSE_USER,
            },
            kwargs.get("initial"),
        )
        self.fields["name"].widget.attrs["placeholder"] = "e.g. Analytics cluster"
        self.fields["password"].required = False


class SchemaRegistryConnectionForm(forms.ModelForm):
    """A schema registry's fields (added on the connections page; the wizard's sample step links to it)."""

    class Meta:
        model = SchemaRegistryConnection
        fields = SchemaRegistryConnection.EDITABLE_FIELDS
        widgets = {
            "password": forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
            "ssl_ca_pem": forms.Textarea(attrs={"rows": 3, "placeholder": "-----BEGIN CERTIFICATE-----"}),
        }
        help_texts = {"url": "The Confluent-compatible API, e.g. https://registry:8081 (Apicurio: …/apis/ccompat/v7)"}

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("prefix", "new")
        super().__init__(*args, **kwargs)
        offer_configured_defaults(self, {"url": settings.SCHEMA_REGISTRY_URL}, kwargs.get("initial"))
        self.fields["name"].widget.attrs["placeholder"] = "e.g. Production registry"
        self.fields["password"].required = False


def connection_data(form: forms.ModelForm, names: Any = None) -> dict[str, Any]:
    """The service's `data` from a valid connection form: its fields (or `names`), empty text for None."""
    values = {name: form.cleaned_data.get(name) for name in (form._meta.fields if names is None else names)}
    return {k: ("" if v is None and k != "port" else v) for k, v in values.items()}
