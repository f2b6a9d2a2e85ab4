"""The SASL mechanisms beyond a user name and a password: GSSAPI (Kerberos), OAUTHBEARER (OIDC client
credentials) and AWS_MSK_IAM, for both Kafka clients (`clearflow_spec.client_config` calls these).

- **GSSAPI.** Java's Kerberos reads the keytab and krb5.conf from files, and krb5.conf from one JVM-wide system
  property. `kerberos_files` writes both into a private directory of the process that asks (mode 0700, files
  0600, removed when it exits): the job writes its own, from the spec file, and nothing of it goes on a command
  line. The web app tests a GSSAPI connection, lists and samples its topics and advises a key through MIT
  Kerberos and kafka-python (`webapp.connections.kafka_gssapi`, with the same files); its librdkafka (as
  confluent-kafka's wheel bundles it) has no GSSAPI, so what needs librdkafka says so (`GSSAPI_UNSUPPORTED`).
- **OAUTHBEARER.** The Java client fetches tokens with Kafka's `OAuthBearerLoginCallbackHandler`; librdkafka with
  its OIDC mode (`sasl.oauthbearer.method=oidc`). Kafka 4 only calls token endpoints a JVM-wide system property
  allows (`OAUTH_ALLOWED_URLS`).
- **AWS_MSK_IAM.** The Java client signs with `software.amazon.msk:aws-msk-iam-auth` (on the job's class path,
  beside kafka-clients); librdkafka sends the same signed token as OAUTHBEARER, from AWS's
  `aws-msk-iam-sasl-signer-python` (`msk_iam_token`).

`jvm_system_properties(kafka)` names what the job sets in its JVM before its Kafka source starts.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import contextlib
import hashlib
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import SecretStr

DEFAULT_SERVICE_NAME = "kafka"
KRB5_CONF_PROPERTY = "java.security.krb5.conf"
OAUTH_ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
OAUTH_LOGIN_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
OAUTH_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
IAM_LOGIN_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
IAM_CALLBACK_HANDLER = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
# A keytab file starts with its format version: 0x05 0x02 (MIT, Heimdal and Java write this one).
_KEYTAB_MAGIC = b"\x05\x02"
GSSAPI_UNSUPPORTED = (
    "The web app tests, lists, samples and advises a key over Kerberos (GSSAPI), but its client for reading a "
    "pipeline's lag and replaying dead letters (librdkafka, as bundled with confluent-kafka) has no Kerberos "
    "(GSSAPI) support. Pipelines do reach the cluster: the job's Java client speaks GSSAPI."
)


class SaslConnection(Protocol):
    """What these functions read of a Kafka connection (`clearflow_spec.connections.KafkaConnectionSpec` is one):
    named here so that this module needs nothing of the connections module, whose validation calls it."""

    sasl_mechanism: str | None
    sasl_kerberos_principal: str | None
    sasl_kerberos_keytab: SecretStr | None
    sasl_kerberos_krb5_conf: str | None
    sasl_kerberos_realm: str | None
    sasl_kerberos_kdc: str | None
    sasl_kerberos_service_name: str | None
    sasl_oauthbearer_token_endpoint_url: str | None
    sasl_oauthbearer_client_id: str | None
    sasl_oauthbearer_client_secret: SecretStr | None
    sasl_oauthbearer_scope: str | None
    sasl_oauthbearer_extensions: str | None
    aws_region: str | None
    aws_access_key_id: str | None
    aws_secret_access_key: SecretStr | None
    aws_role_arn: str | None

    @property
    def uses_sasl(self) -> bool: ...


def jaas_quote(value: str) -> str:
    """A JAAS option value in double quotes (Kafka's parser reads backslash escapes inside quotes)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def keytab_bytes(encoded: str) -> bytes:
    """The keytab from its base64 text; ValueError in words when it is not base64 or not a keytab."""
    try:
        data = base64.b64decode("".join(encoded.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("sasl_kerberos_keytab is not base64: upload the keytab file, or give its base64") from None
    if not data.startswith(_KEYTAB_MAGIC):
        raise ValueError("sasl_kerberos_keytab is not a Kerberos keytab (a keytab file starts with 0x05 0x02)")
    return data


def oauthbearer_extensions(text: str | None) -> dict[str, str]:
    """SASL extensions from `key=value,key=value`; ValueError in words when one is not `key=value`."""
    extensions: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.strip().partition("=")
        if not sep or not key.strip().isalnum() or not value.strip():
            raise ValueError(
                f"sasl_oauthbearer_extensions: {item.strip()!r} is not key=value "
                "(e.g. logicalCluster=lkc-abc123,identityPoolId=pool-xyz)"
            )
        extensions[key.strip()] = value.strip()
    return extensions


def krb5_conf_text(kafka: SaslConnection) -> str:
    """The connection's krb5.conf: the one given, else one naming its realm and KDC (over TCP, which crosses
    firewalls and carries tickets of any size)."""
    if kafka.sasl_kerberos_krb5_conf:
        return kafka.sasl_kerberos_krb5_conf
    realm, kdc = kafka.sasl_kerberos_realm or "", kafka.sasl_kerberos_kdc or ""
    return (
        "[libdefaults]\n"
        f"  default_realm = {realm}\n"
        "  udp_preference_limit = 1\n"
        "  dns_lookup_kdc = false\n"
        "  dns_lookup_realm = false\n"
        "[realms]\n"
        f"  {realm} = {{\n    kdc = {kdc}\n  }}\n"
    )


@dataclass(frozen=True)
class KerberosFiles:
    keytab: str
    krb5_conf: str


_private_dir: str | None = None


def _files_dir() -> str:
    global _private_dir
    if _private_dir is None:
        _private_dir = tempfile.mkdtemp(prefix="clearflow-kerberos-")  # mode 0700
        atexit.register(shutil.rmtree, _private_dir, ignore_errors=True)
    return _private_dir


def kerberos_files(kafka: SaslConnection) -> KerberosFiles:
    """The connection's keytab and krb5.conf in this process's private directory (0600), written once per
    content: a second call with the same connection returns the same paths."""
    keytab = keytab_bytes(kafka.sasl_kerberos_keytab.get_secret_value() if kafka.sasl_kerberos_keytab else "")
    conf = krb5_conf_text(kafka).encode()
    digest = hashlib.sha256(keytab + b"\0" + conf).hexdigest()[:16]
    paths = KerberosFiles(
        keytab=os.path.join(_files_dir(), f"{digest}.keytab"), krb5_conf=os.path.join(_files_dir(), f"{digest}.conf")
    )
    for path, data in ((paths.keytab, keytab), (paths.krb5_conf, conf)):
        if not Path(path).exists():
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(handle, "wb") as out:
                out.write(data)
    return paths


# MIT Kerberos (the web app's GSSAPI client) reads these from the process's environment, at each call.
MIT_KERBEROS_VARIABLES = ("KRB5_CONFIG", "KRB5CCNAME")
_environment_lock = threading.RLock()


@contextlib.contextmanager
def mit_kerberos_environment(kafka: SaslConnection) -> Iterator[tuple[KerberosFiles, str]]:
    """MIT Kerberos's environment for `kafka` for the duration of the block: its krb5.conf (`kerberos_files`) and
    a credential cache of its own (a file beside the keytab, removed after the block, so no block reuses another's
    tickets). Yields the files and the cache's name. One block at a time per process (a lock): the environment is
    the process's."""
    files = kerberos_files(kafka)
    cache_file = os.path.join(os.path.dirname(files.keytab), f"{uuid.uuid4().hex}.ccache")
    with _environment_lock:
        saved = {name: os.environ.get(name) for name in MIT_KERBEROS_VARIABLES}
        os.environ["KRB5_CONFIG"] = files.krb5_conf
        os.environ["KRB5CCNAME"] = f"FILE:{cache_file}"
        try:
            yield files, f"FILE:{cache_file}"
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(cache_file)
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


# -- the Java client (Spark's connector) --------------------------------------------------------------------


def connector_sasl_options(kafka: SaslConnection) -> dict[str, str]:
    """The connector's `kafka.sasl.*` options for GSSAPI, OAUTHBEARER and AWS_MSK_IAM (the JAAS line included)."""
    mechanism = kafka.sasl_mechanism
    if mechanism == "GSSAPI":
        files = kerberos_files(kafka)
        jaas = (
            f"{KRB5_LOGIN_MODULE} required useKeyTab=true storeKey=true useTicketCache=false "
            f"keyTab={jaas_quote(files.keytab)} principal={jaas_quote(kafka.sasl_kerberos_principal or '')};"
        )
        return {
            "kafka.sasl.kerberos.service.name": kafka.sasl_kerberos_service_name or DEFAULT_SERVICE_NAME,
            "kafka.sasl.jaas.config": jaas,
        }
    if mechanism == "OAUTHBEARER":
        secret = kafka.sasl_oauthbearer_client_secret
        parts = [
            f"clientId={jaas_quote(kafka.sasl_oauthbearer_client_id or '')}",
            f"clientSecret={jaas_quote(secret.get_secret_value() if secret else '')}",
        ]
        if kafka.sasl_oauthbearer_scope:
            parts.append(f"scope={jaas_quote(kafka.sasl_oauthbearer_scope)}")
        parts += [
            f"extension_{key}={jaas_quote(value)}"
            for key, value in oauthbearer_extensions(kafka.sasl_oauthbearer_extensions).items()
        ]
        return {
            "kafka.sasl.oauthbearer.token.endpoint.url": kafka.sasl_oauthbearer_token_endpoint_url or "",
            "kafka.sasl.login.callback.handler.class": OAUTH_LOGIN_HANDLER,
            "kafka.sasl.jaas.config": f"{OAUTH_LOGIN_MODULE} required {' '.join(parts)};",
        }
    if mechanism == "AWS_MSK_IAM":
        parts = []
        if kafka.aws_role_arn:
            parts.append(f"awsRoleArn={jaas_quote(kafka.aws_role_arn)}")
            parts.append(f"awsStsRegion={jaas_quote(kafka.aws_region or '')}")
            if kafka.aws_access_key_id and kafka.aws_secret_access_key:
                # The key that may assume the role (aws-msk-iam-auth's own options for it).
                parts.append(f"awsRoleAccessKeyId={jaas_quote(kafka.aws_access_key_id)}")
                parts.append(f"awsRoleSecretAccessKey={jaas_quote(kafka.aws_secret_access_key.get_secret_value())}")
        return {
            "kafka.sasl.jaas.config": f"{IAM_LOGIN_MODULE} required{''.join(' ' + p for p in parts)};",
            "kafka.sasl.client.callback.handler.class": IAM_CALLBACK_HANDLER,
        }
    raise ValueError(f"not a mechanism of this module: {mechanism}")


def jvm_system_properties(kafka: SaslConnection) -> dict[str, str]:
    """The JVM-wide settings the Java client needs for `kafka`, set by the job before its source starts (a
    pipeline reads one cluster). AWS keys without a role go to the SDK's own system properties: its default
    chain reads them there. Secrets included: never log the result."""
    if not kafka.uses_sasl:
        return {}
    if kafka.sasl_mechanism == "GSSAPI":
        return {KRB5_CONF_PROPERTY: kerberos_files(kafka).krb5_conf}
    if kafka.sasl_mechanism == "OAUTHBEARER":
        return {OAUTH_ALLOWED_URLS: kafka.sasl_oauthbearer_token_endpoint_url or ""}
    if kafka.sasl_mechanism == "AWS_MSK_IAM" and not kafka.aws_role_arn and kafka.aws_access_key_id:
        secret = kafka.aws_secret_access_key.get_secret_value() if kafka.aws_secret_access_key else ""
        return {
            "aws.accessKeyId": kafka.aws_access_key_id,
            "aws.secretAccessKey": secret,
            "aws.region": kafka.aws_region or "",
        }
    return {}


# -- librdkafka (the web app) ---------------------------------------------------------------------------


def librdkafka_sasl_config(kafka: SaslConnection) -> dict[str, object]:
    """librdkafka's settings for OAUTHBEARER (its OIDC mode) and AWS_MSK_IAM (a signed token from AWS's signer,
    sent as OAUTHBEARER). ValueError with `GSSAPI_UNSUPPORTED` for GSSAPI."""
    mechanism = kafka.sasl_mechanism
    if mechanism == "GSSAPI":
        raise ValueError(GSSAPI_UNSUPPORTED)
    if mechanism == "OAUTHBEARER":
        secret = kafka.sasl_oauthbearer_client_secret
        config: dict[str, object] = {
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.token.endpoint.url": kafka.sasl_oauthbearer_token_endpoint_url or "",
            "sasl.oauthbearer.client.id": kafka.sasl_oauthbearer_client_id or "",
            "sasl.oauthbearer.client.secret": secret.get_secret_value() if secret else "",
        }
        if kafka.sasl_oauthbearer_scope:
            config["sasl.oauthbearer.scope"] = kafka.sasl_oauthbearer_scope
        extensions = oauthbearer_extensions(kafka.sasl_oauthbearer_extensions)
        if extensions:
            config["sasl.oauthbearer.extensions"] = ",".join(f"{k}={v}" for k, v in extensions.items())
        return config
    if mechanism == "AWS_MSK_IAM":
        return {"sasl.mechanism": "OAUTHBEARER", "oauth_cb": lambda _config: msk_iam_token(kafka)}
    raise ValueError(f"not a mechanism of this module: {mechanism}")


def msk_iam_token(kafka: SaslConnection) -> tuple[str, float]:
    """A signed MSK IAM token and its expiry (epoch seconds), as librdkafka's `oauth_cb` returns them: from the
    connection's access key, its role, or AWS's default credential chain."""
    from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

    region = kafka.aws_region or ""
    if kafka.aws_role_arn:
        token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_role_arn(region, kafka.aws_role_arn)
    elif kafka.aws_access_key_id and kafka.aws_secret_access_key:
        from botocore.credentials import CredentialProvider, Credentials

        credentials = Credentials(kafka.aws_access_key_id, kafka.aws_secret_access_key.get_secret_value())

        class StaticCredentials(CredentialProvider):  # the signer takes a provider: this one has one key
            METHOD = "clearflow-connection"

            def load(self) -> Credentials:
                return credentials

        token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_credentials_provider(
            region, StaticCredentials()
        )
    else:
        token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
    return token, expiry_ms / 1000
