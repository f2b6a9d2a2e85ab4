"""Saved, named connections to a Kafka cluster, a ClickHouse server and a schema registry.

Each model stores exactly the fields of the pipeline spec's connection model (`clearflow_spec.connections`:
`KafkaConnectionSpec`, `ClickHouseConnectionSpec`, `SchemaRegistryConnectionSpec`), plus its owner and name.
`to_spec()` gives that model, which the web app's clients, the pipeline's spec and the job use;
`EDITABLE_FIELDS` and `SECRET_FIELDS` are read from it.

Secrets (passwords, private keys) live in `EncryptedTextField`s: a Fernet token in the database, plain text
in Python. They are never returned by the API, never shown again in the UI and never logged: the dataclasses
handed to the clients keep them out of their `repr`.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from clearflow_spec.connections import (
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    TLS_FILES,
    ClickHouseConnectionSpec,
    KafkaConnectionSpec,
    SchemaRegistryConnectionSpec,
    connection_from_values,
    protocol_uses_sasl,
    protocol_uses_ssl,
    sasl_settings_needed,
    secret_fields,
)
from clearflow_spec.kafka_sasl import keytab_bytes
from webapp.connections import network_guard
from webapp.core.fields import EncryptedTextField
from webapp.core.models import TimeStampedModel

bootstrap_validator = RegexValidator(
    r"^\s*[A-Za-z0-9_.\-\[\]:]+:\d{1,5}(\s*,\s*[A-Za-z0-9_.\-\[\]:]+:\d{1,5})*\s*\Z",
    "Enter host:port pairs separated by commas, e.g. broker1:9092,broker2:9092.",
)
host_validator = RegexValidator(r"^[A-Za-z0-9_.\-\[\]:]+\Z", "Enter a host name or an IP address.")
# The pipeline spec takes database names as plain identifiers; the same rule here keeps quotes, control
# characters and ';' out of what is stored and later written into SQL.
registry_url_validator = RegexValidator(
    r"^https?://[^\s/:@]+(:\d{1,5})?(/[^\s?#]*)?\Z",
    "Enter the registry's URL, e.g. https://registry.example.com or http://127.0.0.1:8081/apis/ccompat/v7.",
)
database_validator = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_]{0,254}\Z", "Use letters, digits and '_', not starting with a digit."
)


def pem_certificate_error(text: str) -> str | None:
    """None when `text` holds one or more PEM certificates, else what is wrong."""
    from cryptography import x509

    try:
        x509.load_pem_x509_certificates(text.strip().encode())
    except ValueError:
        return "Paste the certificate in PEM format (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)."
    return None


def pem_key_error(text: str) -> str | None:
    """None when `text` is an unencrypted PEM private key, else what is wrong."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        load_pem_private_key(text.strip().encode(), password=None)
    except TypeError:
        return "The private key is encrypted; paste it without a password."
    except ValueError:
        return "Paste the private key in PEM format (-----BEGIN PRIVATE KEY----- ... -----END PRIVATE KEY-----)."
    except Exception:  # cryptography raises UnsupportedAlgorithm for exotic keys
        return "The private key type is not supported."
    return None


def one_default(prefix: str) -> models.UniqueConstraint:
    """At most one default connection of a kind per workspace."""
    return models.UniqueConstraint(
        fields=["workspace"], condition=models.Q(is_default=True), name=f"{prefix}_one_default_per_workspace"
    )


class SpecBackedConnection(TimeStampedModel):
    """A saved connection whose fields are those of `SPEC` (the spec's connection model), plus owner and name."""

    SPEC: type[pydantic.BaseModel]
    # The app's own state of a connection, not settings of it (the API shows them, the admin lists them).
    STATE_FIELDS = ("is_default", "last_tested_at", "last_test_ok", "last_test_message")

    # The workspace's default connection of its kind (at most one, a constraint on each model): the wizard
    # preselects it and offers it first; the connections page and the API mark it.
    is_default = models.BooleanField("default", default=False)
    # The last test of this saved connection (the API's, a page's, the wizard's): when, whether it answered, and
    # if not, why in the test's own words. Written by `services` without touching `updated_at`: a test is no edit.
    last_tested_at = models.DateTimeField("last tested", null=True, blank=True)
    last_test_ok = models.BooleanField("last test passed", null=True, blank=True)
    last_test_message = models.CharField("last test's error", max_length=500, blank=True, default="")

    class Meta:
        abstract = True

    def to_spec(self) -> Any:
        """The spec's connection model for this connection, secrets included (`SecretStr`, masked in repr).

        An empty text stands for "not set" where the spec's field defaults to None. Raises pydantic's
        ValidationError only for a connection that `clean()` would refuse.
        """
        values: dict[str, Any] = {}
        for name, info in self.SPEC.model_fields.items():
            value = getattr(self, name)
            values[name] = None if value == "" and info.default is None else value
        return connection_from_values(self.SPEC, values)

    def spec_errors(self) -> dict[str, list[str]]:
        """The spec's own checks (the job runs them too), keyed by field: what `clean()` has not caught."""
        try:
            self.to_spec()
        except pydantic.ValidationError as exc:
            errors: dict[str, list[str]] = {}
            for error in exc.errors(include_url=False):
                name = error["loc"][0] if error["loc"] else NON_FIELD_ERRORS
                field = name if name in self.SPEC.model_fields else NON_FIELD_ERRORS
                errors.setdefault(str(field), []).append(error["msg"].removeprefix("Value error, "))
            return errors
        return {}

    def full_clean(self, exclude: Any = None, validate_unique: bool = True, validate_constraints: bool = True) -> None:
        """Django's checks, then the spec's (a safety net: `clean()` says the same in the user's words first).
        A field left out (`exclude`, e.g. one a form already refused) is not reported twice."""
        super().full_clean(exclude=exclude, validate_unique=validate_unique, validate_constraints=validate_constraints)
        skipped = set(exclude or ())
        errors = {name: messages for name, messages in self.spec_errors().items() if name not in skipped}
        if errors:
            raise ValidationError(errors)

    def _endpoints(self) -> list[tuple[str, int | None]]:
        raise NotImplementedError

    def client_settings(self) -> Any:
        """`to_spec()` for opening a connection now: raises ForbiddenAddressError when a host resolves into a
        network it may not reach (`network_guard`). Every connection the app or a job makes starts here (DNS may
        change after saving)."""
        network_guard.check_endpoints(self._endpoints())
        return self.to_spec()


# The choices are the spec's (`clearflow_spec.connections`); "" is "no SASL mechanism" in a text column.
SECURITY_PROTOCOL_CHOICES = [(protocol, protocol) for protocol in SECURITY_PROTOCOLS]
SASL_MECHANISM_CHOICES = [("", "None"), *((mechanism, mechanism) for mechanism in SASL_MECHANISMS)]
# How `clean()` names what a SASL_* protocol needs (the list of settings is the spec's `sasl_settings_needed`).
_SASL_WORDS = {
    "sasl_mechanism": "a SASL mechanism",
    "sasl_username": "a user name",
    "sasl_password": "a password",
    "sasl_kerberos_principal": "a Kerberos principal",
    "sasl_kerberos_keytab": "a keytab",
    "sasl_oauthbearer_token_endpoint_url": "a token endpoint URL",
    "sasl_oauthbearer_client_id": "a client ID",
    "sasl_oauthbearer_client_secret": "a client secret",
    "aws_region": "an AWS region",
}


class KafkaConnection(SpecBackedConnection):
    SPEC = KafkaConnectionSpec
    # The fields a user sets, in the order forms show them (services' `data` keys, API, admin and wizard forms).
    EDITABLE_FIELDS = ("name", *KafkaConnectionSpec.model_fields)
    SECRET_FIELDS = secret_fields(KafkaConnectionSpec)

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="kafka_connections")
    # Who created it; access is by workspace membership (webapp.workspaces.policy).
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="kafka_connections")
    name = models.CharField(max_length=100)
    bootstrap_servers = models.CharField(max_length=1000, validators=[bootstrap_validator])
    security_protocol = models.CharField(max_length=20, choices=SECURITY_PROTOCOL_CHOICES, default="PLAINTEXT")
    sasl_mechanism = models.CharField(max_length=20, choices=SASL_MECHANISM_CHOICES, blank=True, default="")
    sasl_username = models.CharField(max_length=255, blank=True, default="")
    sasl_password = EncryptedTextField(blank=True, default="")
    ssl_ca_pem = models.TextField("CA certificate (PEM)", blank=True, default="")
    ssl_certificate_pem = models.TextField("client certificate (PEM)", blank=True, default="")
    ssl_key_pem = EncryptedTextField("client private key (PEM)", blank=True, default="")
    sasl_kerberos_principal = models.CharField("Kerberos principal", max_length=255, blank=True, default="")
    sasl_kerberos_keytab = EncryptedTextField("keytab (base64)", blank=True, default="")
    sasl_kerberos_krb5_conf = models.TextField("krb5.conf", blank=True, default="")
    sasl_kerberos_realm = models.CharField("Kerberos realm", max_length=255, blank=True, default="")
    sasl_kerberos_kdc = models.CharField("KDC (host[:port])", max_length=255, blank=True, default="")
    sasl_kerberos_service_name = models.CharField("broker service name", max_length=100, blank=True, default="")
    sasl_oauthbearer_token_endpoint_url = models.CharField(
        "token endpoint URL", max_length=1000, blank=True, default=""
    )
    sasl_oauthbearer_client_id = models.CharField("OAuth client ID", max_length=255, blank=True, default="")
    sasl_oauthbearer_client_secret = EncryptedTextField("OAuth client secret", blank=True, default="")
    sasl_oauthbearer_scope = models.CharField("OAuth scope", max_length=1000, blank=True, default="")
    sasl_oauthbearer_extensions = models.CharField("SASL extensions", max_length=1000, blank=True, default="")
    aws_region = models.CharField("AWS region", max_length=50, blank=True, default="")
    aws_access_key_id = models.CharField("AWS access key ID", max_length=128, blank=True, default="")
    aws_secret_access_key = EncryptedTextField("AWS secret access key", blank=True, default="")
    aws_role_arn = models.CharField("AWS role ARN to assume", max_length=2048, blank=True, default="")

    class Meta:
        verbose_name = "Kafka connection"
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="kafka_connection_unique_name_per_workspace"),
            one_default("kafka_connection"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def uses_sasl(self) -> bool:
        return protocol_uses_sasl(self.security_protocol)

    @property
    def uses_ssl(self) -> bool:
        return protocol_uses_ssl(self.security_protocol)

    @property
    def has_sasl_password(self) -> bool:
        return bool(self.sasl_password)

    @property
    def has_ssl_key(self) -> bool:
        return bool(self.ssl_key_pem)

    @property
    def secrets_set(self) -> list[str]:
        """The secrets this connection holds, in words (the connections page lists them, never their values)."""
        words = {
            "sasl_password": "password",
            "ssl_key_pem": "client key",
            "sasl_kerberos_keytab": "keytab",
            "sasl_oauthbearer_client_secret": "client secret",
            "aws_secret_access_key": "AWS secret key",
        }
        return [f"{word} set" for name, word in words.items() if getattr(self, name)]

    @property
    def has_sasl_kerberos_keytab(self) -> bool:
        return bool(self.sasl_kerberos_keytab)

    @property
    def has_sasl_oauthbearer_client_secret(self) -> bool:
        return bool(self.sasl_oauthbearer_client_secret)

    @property
    def has_aws_secret_access_key(self) -> bool:
        return bool(self.aws_secret_access_key)

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.uses_sasl:
            for name in sasl_settings_needed(self.sasl_mechanism or None):
                if not getattr(self, name):
                    errors[name] = f"{self.security_protocol} needs {_SASL_WORDS[name]}."
        elif self.sasl_mechanism:
            sasl = " or ".join(p for p in SECURITY_PROTOCOLS if protocol_uses_sasl(p))
            errors["sasl_mechanism"] = f"A SASL mechanism needs security protocol {sasl}."
        if not self.uses_ssl:
            for name in TLS_FILES:
                if getattr(self, name):
                    errors[name] = "Certificates and keys need security protocol SSL or SASL_SSL."
        if self.ssl_key_pem and not self.ssl_certificate_pem:
            errors["ssl_certificate_pem"] = "A client key needs its client certificate."
        if self.ssl_certificate_pem and not self.ssl_key_pem:
            errors.setdefault("ssl_key_pem", "A client certificate needs its private key.")
        for name in ("ssl_ca_pem", "ssl_certificate_pem"):
            value = getattr(self, name)
            if value and (problem := pem_certificate_error(value)):
                errors.setdefault(name, problem)
        if self.ssl_key_pem and (problem := pem_key_error(self.ssl_key_pem)):
            errors.setdefault("ssl_key_pem", problem)
        if self.sasl_mechanism == "GSSAPI" and self.sasl_kerberos_keytab:
            try:
                keytab_bytes(self.sasl_kerberos_keytab)
            except ValueError as exc:
                errors.setdefault("sasl_kerberos_keytab", str(exc))
        for host, port in network_guard.bootstrap_endpoints(self.bootstrap_servers or ""):
            if problem := network_guard.host_error(host, port):
                errors.setdefault("bootstrap_servers", problem)
        if self.sasl_mechanism == "OAUTHBEARER":
            for host, port in network_guard.url_endpoints(self.sasl_oauthbearer_token_endpoint_url or ""):
                if problem := network_guard.host_error(host, port):
                    errors.setdefault("sasl_oauthbearer_token_endpoint_url", problem)
        if errors:
            raise ValidationError(errors)

    def _endpoints(self) -> list[tuple[str, int | None]]:
        endpoints = network_guard.bootstrap_endpoints(self.bootstrap_servers)
        if self.sasl_mechanism == "OAUTHBEARER" and self.sasl_oauthbearer_token_endpoint_url:
            # The web app's client calls the token endpoint too: it is guarded as the brokers are.
            endpoints += network_guard.url_endpoints(self.sasl_oauthbearer_token_endpoint_url)
        return endpoints


class ClickHouseConnection(SpecBackedConnection):
    SPEC = ClickHouseConnectionSpec
    # The fields a user sets, in the order forms show them (services' `data` keys, API, admin and wizard forms).
    EDITABLE_FIELDS = ("name", *ClickHouseConnectionSpec.model_fields)
    SECRET_FIELDS = secret_fields(ClickHouseConnectionSpec)

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="clickhouse_connections"
    )
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="clickhouse_connections")
    name = models.CharField(max_length=100)
    host = models.CharField(max_length=255, validators=[host_validator])
    port = models.PositiveIntegerField(default=8123, validators=[MinValueValidator(1), MaxValueValidator(65535)])
    secure = models.BooleanField("HTTPS", default=False)
    verify = models.BooleanField("verify the server certificate", default=True)
    ssl_ca_pem = models.TextField("CA certificate (PEM)", blank=True, default="")
    username = models.CharField(max_length=255, default="default")
    password = EncryptedTextField(blank=True, default="")
    database = models.CharField("default database", max_length=255, default="default", validators=[database_validator])

    class Meta:
        # Django would derive "click house connection" from the class name.
        verbose_name = "ClickHouse connection"
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "name"], name="clickhouse_connection_unique_name_per_workspace"
            ),
            one_default("clickhouse_connection"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_password(self) -> bool:
        return bool(self.password)

    def clean(self) -> None:
        if self.ssl_ca_pem and not self.secure:
            raise ValidationError({"ssl_ca_pem": "A CA certificate needs HTTPS."})
        if self.ssl_ca_pem and (problem := pem_certificate_error(self.ssl_ca_pem)):
            raise ValidationError({"ssl_ca_pem": problem})
        if self.host and (problem := network_guard.host_error(self.host, self.port)):
            raise ValidationError({"host": problem})

    def _endpoints(self) -> list[tuple[str, int | None]]:
        return [(self.host, self.port)]


class SchemaRegistryConnection(SpecBackedConnection):
    """A Confluent-compatible schema registry (Confluent, Apicurio's ccompat API, Karapace...)."""

    SPEC = SchemaRegistryConnectionSpec
    # The fields a user sets, in the order forms show them (services' `data` keys, API, admin and wizard forms).
    EDITABLE_FIELDS = ("name", *SchemaRegistryConnectionSpec.model_fields)
    SECRET_FIELDS = secret_fields(SchemaRegistryConnectionSpec)

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="schema_registry_connections"
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="schema_registry_connections"
    )
    name = models.CharField(max_length=100)
    url = models.CharField("URL", max_length=1000, validators=[registry_url_validator])
    username = models.CharField("user name (basic auth)", max_length=255, blank=True, default="")
    password = EncryptedTextField("password (basic auth)", blank=True, default="")
    verify = models.BooleanField("verify the server certificate", default=True)
    ssl_ca_pem = models.TextField("CA certificate (PEM)", blank=True, default="")

    class Meta:
        verbose_name = "schema registry connection"
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "name"], name="schema_registry_connection_unique_name_per_workspace"
            ),
            one_default("schema_registry_connection"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_password(self) -> bool:
        return bool(self.password)

    def clean(self) -> None:
        self.url = (self.url or "").strip().rstrip("/")  # as the spec keeps it: paths are added to it
        errors: dict[str, str] = {}
        if bool(self.username) != bool(self.password):
            missing = "password" if self.username else "username"
            errors[missing] = "Basic auth needs both a user name and a password."
        if self.ssl_ca_pem and not (self.url or "").startswith("https://"):
            errors["ssl_ca_pem"] = "A CA certificate needs an https:// URL."
        elif self.ssl_ca_pem and (problem := pem_certificate_error(self.ssl_ca_pem)):
            errors["ssl_ca_pem"] = problem
        for host, port in self._endpoints():
            if problem := network_guard.host_error(host, port):
                errors.setdefault("url", problem)
        if errors:
            raise ValidationError(errors)

    def _endpoints(self) -> list[tuple[str, int | None]]:
        return network_guard.url_endpoints(self.url or "")


class HeavyRequest(models.Model):
    """One request that reads many events of a user's Kafka connection (key advice, a sample, the fields inferred
    from one, a spec's live check), run by the worker rather than on a web thread: the page or the API client asks
    for its answer until it is there (`webapp.connections.heavy_requests`). Kept for `HEAVY_REQUEST_KEEP_SECONDS`
    after it ends."""

    class Kind(models.TextChoices):
        KEY_ADVICE = "key_advice", "key advice"
        SAMPLE = "sample", "sample"
        INFER_SCHEMA = "infer_schema", "schema inference"
        LIVE_CHECK = "live_check", "live check of a spec"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="heavy_requests")
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="heavy_requests")
    connection = models.ForeignKey(KafkaConnection, on_delete=models.CASCADE, related_name="heavy_requests")
    # What to do: the validated input (JSON), and for the wizard the draft whose step asked.
    params = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.CharField(max_length=200, blank=True)  # in words, for the page and the API while it runs
    # The answer as JSON text: sampled values may hold NUL characters, which PostgreSQL's JSON cannot.
    result_json = models.TextField(blank=True)
    # A failure as the API answers it: {"status_code": 502, "code": ..., "message": ..., "extra": {...}}.
    error = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "created"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.pk} ({self.status})"

    @property
    def result(self) -> Any:
        """The answer (None until done)."""
        return json.loads(self.result_json) if self.result_json else None
