"""Saved, named connections to a Kafka cluster and to a ClickHouse server.

Secrets (passwords, private keys) live in `EncryptedTextField`s: a Fernet token in the database, plain text
in Python. They are never returned by the API, never shown again in the UI and never logged: the dataclasses
handed to the clients keep them out of their `repr`.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from webapp.connections import network_guard
from webapp.connections.clickhouse_client import ClickHouseSettings
from webapp.connections.kafka_client import KafkaSettings
from webapp.core.fields import EncryptedTextField
from webapp.core.models import TimeStampedModel

bootstrap_validator = RegexValidator(
    r"^\s*[A-Za-z0-9_.\-\[\]:]+:\d{1,5}(\s*,\s*[A-Za-z0-9_.\-\[\]:]+:\d{1,5})*\s*$",
    "Enter host:port pairs separated by commas, e.g. broker1:9092,broker2:9092.",
)
host_validator = RegexValidator(r"^[A-Za-z0-9_.\-\[\]:]+$", "Enter a host name or an IP address.")
# The pipeline spec takes database names as plain identifiers; the same rule here keeps quotes, control
# characters and ';' out of what is stored and later written into SQL.
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


class KafkaSecurityProtocol(models.TextChoices):
    PLAINTEXT = "PLAINTEXT", "PLAINTEXT"
    SSL = "SSL", "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT", "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL", "SASL_SSL"


class KafkaSaslMechanism(models.TextChoices):
    NONE = "", "None"
    PLAIN = "PLAIN", "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256", "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512", "SCRAM-SHA-512"


class KafkaConnection(TimeStampedModel):
    # The fields a user sets, in the order forms show them (services' `data` keys, admin and wizard forms).
    EDITABLE_FIELDS = (
        "name",
        "bootstrap_servers",
        "security_protocol",
        "sasl_mechanism",
        "sasl_username",
        "sasl_password",
        "ssl_ca_pem",
        "ssl_certificate_pem",
        "ssl_key_pem",
    )
    SECRET_FIELDS = ("sasl_password", "ssl_key_pem")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="kafka_connections")
    name = models.CharField(max_length=100)
    bootstrap_servers = models.CharField(max_length=1000, validators=[bootstrap_validator])
    security_protocol = models.CharField(
        max_length=20, choices=KafkaSecurityProtocol.choices, default=KafkaSecurityProtocol.PLAINTEXT
    )
    sasl_mechanism = models.CharField(max_length=20, choices=KafkaSaslMechanism.choices, blank=True, default="")
    sasl_username = models.CharField(max_length=255, blank=True, default="")
    sasl_password = EncryptedTextField(blank=True, default="")
    ssl_ca_pem = models.TextField("CA certificate (PEM)", blank=True, default="")
    ssl_certificate_pem = models.TextField("client certificate (PEM)", blank=True, default="")
    ssl_key_pem = EncryptedTextField("client private key (PEM)", blank=True, default="")

    class Meta:
        verbose_name = "Kafka connection"
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="kafka_connection_unique_name_per_owner")]

    def __str__(self) -> str:
        return self.name

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in (KafkaSecurityProtocol.SASL_PLAINTEXT, KafkaSecurityProtocol.SASL_SSL)

    @property
    def uses_ssl(self) -> bool:
        return self.security_protocol in (KafkaSecurityProtocol.SSL, KafkaSecurityProtocol.SASL_SSL)

    @property
    def has_sasl_password(self) -> bool:
        return bool(self.sasl_password)

    @property
    def has_ssl_key(self) -> bool:
        return bool(self.ssl_key_pem)

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.uses_sasl:
            if not self.sasl_mechanism:
                errors["sasl_mechanism"] = f"{self.security_protocol} needs a SASL mechanism."
            if not self.sasl_username:
                errors["sasl_username"] = f"{self.security_protocol} needs a user name."
        elif self.sasl_mechanism:
            errors["sasl_mechanism"] = "A SASL mechanism needs security protocol SASL_PLAINTEXT or SASL_SSL."
        if not self.uses_ssl:
            for name in ("ssl_ca_pem", "ssl_certificate_pem", "ssl_key_pem"):
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
        for host in network_guard.bootstrap_hosts(self.bootstrap_servers or ""):
            if problem := network_guard.host_error(host):
                errors.setdefault("bootstrap_servers", problem)
        if errors:
            raise ValidationError(errors)

    def client_settings(self) -> KafkaSettings:
        """What the Kafka client needs, secrets included (kept out of the dataclass's repr).

        Raises ForbiddenAddressError when a bootstrap server resolves into a forbidden network: every
        connection the app or a job makes starts here.
        """
        network_guard.check_hosts(network_guard.bootstrap_hosts(self.bootstrap_servers))
        return KafkaSettings(
            bootstrap_servers=",".join(s.strip() for s in self.bootstrap_servers.split(",") if s.strip()),
            security_protocol=self.security_protocol,
            sasl_mechanism=self.sasl_mechanism or None,
            sasl_username=self.sasl_username or None,
            sasl_password=self.sasl_password or None,
            ssl_ca_pem=self.ssl_ca_pem or None,
            ssl_certificate_pem=self.ssl_certificate_pem or None,
            ssl_key_pem=self.ssl_key_pem or None,
        )


class ClickHouseConnection(TimeStampedModel):
    # The fields a user sets, in the order forms show them (services' `data` keys, admin and wizard forms).
    EDITABLE_FIELDS = ("name", "host", "port", "username", "password", "database", "secure", "verify", "ssl_ca_pem")
    SECRET_FIELDS = ("password",)

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="clickhouse_connections")
    name = models.CharField(max_length=100)
    host = models.CharField(max_length=255, validators=[host_validator])
    port = models.PositiveIntegerField(default=8123, validators=[MinValueValidator(1), MaxValueValidator(65535)])
    secure = models.BooleanField("HTTPS", default=False)
    verify = models.BooleanField("verify the server certificate", default=True)
    ssl_ca_pem = models.TextField("CA certificate (PEM)", blank=True, default="")
    username = models.CharField(max_length=255, default="default")
    password = EncryptedTextField(blank=True, default="")
    database = models.CharField(
        "default database", max_length=255, default="default", validators=[database_validator]
    )

    class Meta:
        # Django would derive "click house connection" from the class name.
        verbose_name = "ClickHouse connection"
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="clickhouse_connection_unique_name_per_owner")
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
        if self.host and (problem := network_guard.host_error(self.host)):
            raise ValidationError({"host": problem})

    def client_settings(self) -> ClickHouseSettings:
        """What the ClickHouse client needs; raises ForbiddenAddressError for a host in a forbidden network."""
        network_guard.check_hosts([self.host])
        return ClickHouseSettings(
            host=self.host,
            port=self.port,
            username=self.username,
            password=self.password,
            secure=self.secure,
            verify=self.verify,
            ssl_ca_pem=self.ssl_ca_pem or None,
            database=self.database or "default",
        )
