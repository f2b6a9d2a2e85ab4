"""How to reach Kafka and ClickHouse: the one description, shared by the pipeline spec, the web app and the job.

`KafkaConnectionSpec`, `SchemaRegistryConnectionSpec` and `ClickHouseConnectionSpec` are the spec's
`source.kafka`, `source.schema_registry` and `sink.clickhouse`.
The web app's saved connections (`webapp.connections.models`) store exactly these fields and hand out these
models (`connection.to_spec()`); its clients, the health check and the job build their clients from them
with `clearflow_spec.client_config`, one function per client library.

A pipeline spec names its connections' details in `source.kafka` and `sink.clickhouse`; the web app stores specs
with them filled in from saved connections, and pipeline files (the `clearflow` command) leave them out.
`spec_with_connections` and `spec_without_connections` move between the two forms.

Adding a connection setting: a field here, its line in `clearflow_spec.client_config`, and the Django model's
field with its migration. Secrets are `SecretStr` (masked in `repr`); the functions return them in clear, so their
results are never logged. No Spark and no Django import here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, get_args

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from clearflow_spec.kafka_sasl import (
    oauthbearer_extensions,
)

SECRET_MASK = "**********"  # noqa: S105 - the mask, not a password

ConnectionSpec = TypeVar("ConnectionSpec", bound=BaseModel)
_STRICT = ConfigDict(extra="forbid", str_strip_whitespace=False, validate_default=True)
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")

# Kafka's security settings, and which go with which protocol: the spec checks them, the web app's saved
# connection offers them as choices and says which field is missing.
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER", "AWS_MSK_IAM"]
SECURITY_PROTOCOLS: tuple[str, ...] = get_args(SecurityProtocol)
SASL_MECHANISMS: tuple[str, ...] = get_args(SaslMechanism)
# What each SASL mechanism needs; PLAIN and SCRAM need a user name and a password (`sasl_settings_needed`).
SASL_SETTINGS = ("sasl_mechanism", "sasl_username", "sasl_password")
_MECHANISM_SETTINGS: dict[str, tuple[str, ...]] = {
    # Kerberos: where the KDC is comes from `sasl_kerberos_krb5_conf`, or from realm and KDC (checked below).
    "GSSAPI": ("sasl_kerberos_principal", "sasl_kerberos_keytab"),
    "OAUTHBEARER": (
        "sasl_oauthbearer_token_endpoint_url",
        "sasl_oauthbearer_client_id",
        "sasl_oauthbearer_client_secret",
    ),
    # AWS's default credential chain (environment, instance profile, ...) when no access key is given.
    "AWS_MSK_IAM": ("aws_region",),
}
TLS_FILES = ("ssl_ca_pem", "ssl_certificate_pem", "ssl_key_pem")  # only with SSL or SASL_SSL
# The settings of one SASL mechanism only (Kerberos, OAuth, AWS IAM): left out of a connection's dict when unset, so
# a spec file, an export or an answer carries those of the mechanism it uses and not a dozen empty ones.
_MECHANISM_ONLY = ("sasl_kerberos_", "sasl_oauthbearer_", "aws_")


def sasl_settings_needed(mechanism: str | None) -> tuple[str, ...]:
    """The fields a SASL_* protocol needs with `mechanism` (the mechanism first)."""
    if mechanism is None:
        return SASL_SETTINGS
    return ("sasl_mechanism", *_MECHANISM_SETTINGS.get(mechanism, SASL_SETTINGS[1:]))


# Each secret's flag in the API's answers and the CLI's documents ("is it set?"): the secret itself is never shown.
KAFKA_SECRET_FLAGS = {
    "sasl_password": "has_sasl_password",
    "ssl_key_pem": "has_ssl_key",
    "sasl_kerberos_keytab": "has_sasl_kerberos_keytab",
    "sasl_oauthbearer_client_secret": "has_sasl_oauthbearer_client_secret",
    "aws_secret_access_key": "has_aws_secret_access_key",
}


def protocol_uses_sasl(protocol: str) -> bool:
    return protocol.startswith("SASL_")


def protocol_uses_ssl(protocol: str) -> bool:
    return protocol in ("SSL", "SASL_SSL")


class KafkaConnectionSpec(BaseModel):
    """A Kafka cluster: brokers, security protocol, SASL credentials, TLS certificates (PEM)."""

    model_config = _STRICT

    bootstrap_servers: str = Field(min_length=1)
    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    # Specs written before the names matched the saved connection's say `username` / `password`.
    sasl_username: str | None = Field(default=None, validation_alias=AliasChoices("sasl_username", "username"))
    sasl_password: SecretStr | None = Field(default=None, validation_alias=AliasChoices("sasl_password", "password"))
    ssl_ca_pem: str | None = None
    ssl_certificate_pem: str | None = None
    ssl_key_pem: SecretStr | None = None
    # GSSAPI (Kerberos): the client's principal and its keytab (the file's bytes in base64), and where the KDC is:
    # a whole krb5.conf, or a realm and its KDC (host[:port]). The broker's service name is "kafka" unless set.
    sasl_kerberos_principal: str | None = None
    sasl_kerberos_keytab: SecretStr | None = None
    sasl_kerberos_krb5_conf: str | None = None
    sasl_kerberos_realm: str | None = None
    sasl_kerberos_kdc: str | None = None
    sasl_kerberos_service_name: str | None = None
    # OAUTHBEARER: OAuth 2 client credentials against an OIDC token endpoint; `extensions` are SASL extensions
    # as key=value pairs separated by commas (Confluent Cloud: logicalCluster=lkc-...,identityPoolId=pool-...).
    sasl_oauthbearer_token_endpoint_url: str | None = None
    sasl_oauthbearer_client_id: str | None = None
    sasl_oauthbearer_client_secret: SecretStr | None = None
    sasl_oauthbearer_scope: str | None = None
    sasl_oauthbearer_extensions: str | None = None
    # AWS_MSK_IAM: the cluster's region; an access key (else AWS's default credential chain); a role to assume.
    aws_region: str | None = None
    aws_access_key_id: str | None = None
    aws_secret_access_key: SecretStr | None = None
    aws_role_arn: str | None = None

    @model_serializer(mode="wrap")
    def _without_other_mechanisms(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        unset = [name for name, value in data.items() if value is None and name.startswith(_MECHANISM_ONLY)]
        return {name: value for name, value in data.items() if name not in unset}

    @field_validator("bootstrap_servers")
    @classmethod
    def _servers(cls, value: str) -> str:
        servers = [server.strip() for server in value.split(",")]
        for server in servers:
            host, sep, port = server.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"invalid server {server!r}: expected host:port[,host:port...]")
        return ",".join(servers)  # as the clients take them: no spaces

    @model_validator(mode="after")
    def _security(self) -> KafkaConnectionSpec:
        if self.uses_sasl:
            missing = [name for name in sasl_settings_needed(self.sasl_mechanism) if not getattr(self, name)]
            if missing:
                raise ValueError(f"{self.security_protocol} needs {', '.join(missing)}")
            if self.sasl_mechanism == "GSSAPI" and not (
                self.sasl_kerberos_krb5_conf or (self.sasl_kerberos_realm and self.sasl_kerberos_kdc)
            ):
                raise ValueError("GSSAPI needs sasl_kerberos_krb5_conf, or sasl_kerberos_realm and sasl_kerberos_kdc")
            if self.sasl_mechanism == "OAUTHBEARER":
                oauthbearer_extensions(self.sasl_oauthbearer_extensions)  # raises ValueError in words
            if self.sasl_mechanism == "AWS_MSK_IAM" and not self.uses_ssl:
                raise ValueError("AWS_MSK_IAM needs security protocol SASL_SSL (MSK's IAM listeners use TLS)")
            if bool(self.aws_access_key_id) != bool(self.aws_secret_access_key):
                raise ValueError("aws_access_key_id and aws_secret_access_key go together")
        if bool(self.ssl_certificate_pem) != bool(self.ssl_key_pem):
            raise ValueError("ssl_certificate_pem and ssl_key_pem go together (client certificate)")
        return self

    @property
    def uses_sasl(self) -> bool:
        return protocol_uses_sasl(self.security_protocol)

    @property
    def uses_ssl(self) -> bool:
        return protocol_uses_ssl(self.security_protocol)


class SchemaRegistryConnectionSpec(BaseModel):
    """A Confluent-compatible schema registry over HTTP(S): the API's base URL, basic auth, TLS (private CA)."""

    model_config = _STRICT

    # The API's root, e.g. https://registry.example.com or http://127.0.0.1:8081/apis/ccompat/v7 (Apicurio).
    url: str = Field(min_length=1)
    username: str | None = None
    password: SecretStr | None = None
    # Checked against the system's CAs, or against `ssl_ca_pem` when given (a private CA).
    verify: bool = True
    ssl_ca_pem: str | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if "," in value:
            # The registry client would try each URL of a list in turn: one URL, one registry, one guarded host.
            raise ValueError(
                f"the registry URL {value!r} holds a comma: give one URL per registry connection "
                "(a comma-separated list of URLs is not supported)"
            )
        if not re.fullmatch(r"https?://[^\s/:@]+(:\d{1,5})?(/[^\s?#]*)?", value.strip()):
            raise ValueError(f"invalid registry URL {value!r}: expected http(s)://host[:port][/path]")
        return value.strip().rstrip("/")

    @model_validator(mode="after")
    def _auth(self) -> SchemaRegistryConnectionSpec:
        if bool(self.username) != bool(self.password and self.password.get_secret_value()):
            raise ValueError("username and password go together (basic auth)")
        if self.ssl_ca_pem and not self.url.startswith("https://"):
            raise ValueError("ssl_ca_pem needs an https:// URL")
        return self


class ClickHouseConnectionSpec(BaseModel):
    """A ClickHouse server over HTTP(S): address, credentials, default database, TLS (verify, private CA)."""

    model_config = _STRICT

    host: str = Field(min_length=1)
    port: int = Field(default=8123, ge=1, le=65535)
    username: str = "default"
    password: SecretStr = SecretStr("")
    database: str = "default"
    secure: bool = False
    # Checked against the system's CAs, or against `ssl_ca_pem` when given (a private CA). Specs written
    # before these settings existed verify against the system's CAs, as the job did then.
    verify: bool = True
    ssl_ca_pem: str | None = None

    @field_validator("database")
    @classmethod
    def _database(cls, value: str) -> str:
        if not _IDENT_RE.match(value):
            raise ValueError(f"invalid database name {value!r}: use letters, digits and '_', not starting with a digit")
        return value

    @model_validator(mode="after")
    def _tls(self) -> ClickHouseConnectionSpec:
        if self.ssl_ca_pem and not self.secure:
            raise ValueError("ssl_ca_pem needs secure (HTTPS)")
        return self


def secret_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The names of `model`'s secret fields (`SecretStr`), in declaration order."""
    return tuple(
        name
        for name, info in model.model_fields.items()
        if info.annotation is SecretStr or SecretStr in getattr(info.annotation, "__args__", ())
    )


def connection_from_values(model: type[ConnectionSpec], values: dict[str, Any]) -> ConnectionSpec:
    """`model` validated from plain values. Secrets are wrapped first, so that a validation error, which repeats
    its input, shows them masked wherever it is logged."""
    secrets = secret_fields(model)
    wrapped = {
        name: SecretStr(value) if name in secrets and isinstance(value, str) else value
        for name, value in values.items()
    }
    return model.model_validate(wrapped)


def connection_dict(connection: BaseModel, *, reveal_secrets: bool) -> dict[str, Any]:
    """A JSON-ready dict of a connection spec. A secret that is set shows `SECRET_MASK` unless revealed; an
    empty one stays empty, so a reader can tell "no password" from "a password"."""
    data = connection.model_dump(mode="python")
    for name, value in data.items():
        if isinstance(value, SecretStr):
            secret = value.get_secret_value()
            data[name] = secret if reveal_secrets or not secret else SECRET_MASK
    return data


# -- a pipeline spec's connection sections ------------------------------------------------------------------

# `sink.clickhouse.database` is the pipeline's target database, not a detail of the connection (whose `database`
# is only the default a new pipeline starts from).
PIPELINE_DATABASE = "database"


def spec_with_connections(
    spec: Mapping[str, Any],
    *,
    kafka: Mapping[str, Any] | None = None,
    clickhouse: Mapping[str, Any] | None = None,
    schema_registry: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A copy of `spec` (a pipeline spec's JSON) with `source.kafka` set to `kafka` and `sink.clickhouse` to
    `clickhouse` (sections as `connection_dict` writes them), when given. A `sink.clickhouse.database` the spec
    gives is kept. Sections that are not objects are left for the spec's validation to report. Only the levels it
    changes are copied (the top, `source`, `sink`): `spec` is left as it was, and a large one costs no deep copy."""
    data: dict[str, Any] = dict(spec)
    source, sink = data.get("source"), data.get("sink")
    if kafka is not None and isinstance(source, dict):
        data["source"] = source = {**source, "kafka": dict(kafka)}
    if schema_registry is not None and isinstance(source, dict):
        data["source"] = {**source, "schema_registry": dict(schema_registry)}
    # A join's right side reads the same cluster (and registry) as the left one: a pipeline has one of each.
    join = data.get("join")
    right = join.get("source") if isinstance(join, dict) else None
    if isinstance(join, dict) and isinstance(right, dict):
        if kafka is not None:
            right = {**right, "kafka": dict(kafka)}
        if schema_registry is not None and right.get("format", "json") != "json":
            right = {**right, "schema_registry": dict(schema_registry)}
        data["join"] = {**join, "source": right}
    if clickhouse is not None and isinstance(sink, dict):
        given = sink.get("clickhouse")
        database = given.get(PIPELINE_DATABASE) if isinstance(given, dict) else None
        section = dict(clickhouse)
        if isinstance(database, str) and database:
            section[PIPELINE_DATABASE] = database
        data["sink"] = {**sink, "clickhouse": section}
    return data


def spec_without_connections(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `spec` without what its connections give: no `source.kafka`, and of `sink.clickhouse` only
    `database` (the part of a spec a pipeline file holds, and what says whether two versions differ). Only the
    levels it changes are copied."""
    data: dict[str, Any] = dict(spec)
    source, sink = data.get("source"), data.get("sink")
    if isinstance(source, dict):
        data["source"] = {k: v for k, v in source.items() if k not in ("kafka", "schema_registry")}
    join = data.get("join")
    if isinstance(join, dict) and isinstance(join.get("source"), dict):
        right = {k: v for k, v in join["source"].items() if k not in ("kafka", "schema_registry")}
        data["join"] = {**join, "source": right}
    if isinstance(sink, dict) and "clickhouse" in sink:
        section = sink["clickhouse"]
        if isinstance(section, dict) and PIPELINE_DATABASE in section:
            data["sink"] = {**sink, "clickhouse": {PIPELINE_DATABASE: section[PIPELINE_DATABASE]}}
        else:
            data["sink"] = {k: v for k, v in sink.items() if k != "clickhouse"}
    return data


__all__ = [
    "KAFKA_SECRET_FLAGS",
    "PIPELINE_DATABASE",
    "SECRET_MASK",
    "ClickHouseConnectionSpec",
    "KafkaConnectionSpec",
    "SchemaRegistryConnectionSpec",
    "connection_dict",
    "connection_from_values",
    "secret_fields",
    "spec_with_connections",
    "spec_without_connections",
]
