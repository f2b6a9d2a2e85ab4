"""GSSAPI, OAUTHBEARER and AWS_MSK_IAM in the one description of a Kafka connection: what each client gets.

The live runs are elsewhere (GSSAPI: tests/spark_jobs/test_engine_security.py against a real KDC; AWS_MSK_IAM
refused by a broker: tests/webapp/api/test_connections_security.py). Here: the options, the files the job writes
for itself, the JVM-wide properties, the words of a setting that is missing, and AWS's signer making a token.
"""

from __future__ import annotations

import base64
import os
import stat
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from clearflow_spec.client_config import kafka_connector_options, librdkafka_config
from clearflow_spec.connections import KafkaConnectionSpec, connection_from_values
from clearflow_spec.kafka_sasl import GSSAPI_UNSUPPORTED, jvm_system_properties, msk_iam_token

pytestmark = pytest.mark.fast

KEYTAB = base64.b64encode(b"\x05\x02" + b"\x00" * 30).decode()
ACCESS_KEY, SECRET_KEY = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _kafka(**values) -> KafkaConnectionSpec:
    return connection_from_values(KafkaConnectionSpec, {"bootstrap_servers": "broker:9093", **values})


def _gssapi(**values) -> KafkaConnectionSpec:
    return _kafka(
        security_protocol="SASL_SSL",
        sasl_mechanism="GSSAPI",
        sasl_kerberos_principal="clearflow@EXAMPLE.COM",
        sasl_kerberos_keytab=KEYTAB,
        sasl_kerberos_realm="EXAMPLE.COM",
        sasl_kerberos_kdc="kdc.example.com:88",
        **values,
    )


def test_gssapi_gives_the_java_client_a_keytab_file_of_its_own_and_krb5_conf_by_property():
    kafka = _gssapi()
    options = kafka_connector_options(kafka)
    assert options["kafka.sasl.mechanism"] == "GSSAPI"
    assert options["kafka.sasl.kerberos.service.name"] == "kafka"
    jaas = options["kafka.sasl.jaas.config"]
    assert jaas.startswith("com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true")
    assert 'principal="clearflow@EXAMPLE.COM"' in jaas and KEYTAB not in jaas
    keytab = jaas.split('keyTab="', 1)[1].split('"', 1)[0]
    krb5_conf = jvm_system_properties(kafka)["java.security.krb5.conf"]
    for path in (keytab, krb5_conf):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(keytab)).st_mode) == 0o700
    assert Path(keytab).read_bytes() == base64.b64decode(KEYTAB)
    conf = Path(krb5_conf).read_text()
    assert "default_realm = EXAMPLE.COM" in conf and "kdc = kdc.example.com:88" in conf
    # The same connection again: the same files, not one more pair per query.
    assert kafka_connector_options(kafka)["kafka.sasl.jaas.config"] == jaas
    given = _gssapi(sasl_kerberos_krb5_conf="[libdefaults]\n default_realm = OTHER\n", sasl_kerberos_service_name="k")
    assert Path(jvm_system_properties(given)["java.security.krb5.conf"]).read_text().endswith("default_realm = OTHER\n")
    assert kafka_connector_options(given)["kafka.sasl.kerberos.service.name"] == "k"


def test_gssapi_is_refused_in_words_by_the_web_apps_client():
    with pytest.raises(ValueError, match="no Kerberos") as refused:
        librdkafka_config(_gssapi())
    assert str(refused.value) == GSSAPI_UNSUPPORTED


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"sasl_mechanism": "GSSAPI"}, "needs sasl_kerberos_principal, sasl_kerberos_keytab"),
        (
            {"sasl_mechanism": "GSSAPI", "sasl_kerberos_principal": "p", "sasl_kerberos_keytab": KEYTAB},
            "GSSAPI needs sasl_kerberos_krb5_conf, or sasl_kerberos_realm and sasl_kerberos_kdc",
        ),
        ({"sasl_mechanism": "OAUTHBEARER"}, "needs sasl_oauthbearer_token_endpoint_url"),
        ({"sasl_mechanism": "AWS_MSK_IAM"}, "needs aws_region"),
        (
            {
                "sasl_mechanism": "OAUTHBEARER",
                "sasl_oauthbearer_token_endpoint_url": "https://idp/token",
                "sasl_oauthbearer_client_id": "c",
                "sasl_oauthbearer_client_secret": "s",
                "sasl_oauthbearer_extensions": "logicalCluster",
            },
            "'logicalCluster' is not key=value",
        ),
    ],
)
def test_a_missing_setting_is_named(values, words):
    with pytest.raises(ValueError, match=words):
        _kafka(security_protocol="SASL_SSL", **values)


def test_aws_msk_iam_needs_tls_and_both_halves_of_a_key():
    with pytest.raises(ValueError, match="AWS_MSK_IAM needs security protocol SASL_SSL"):
        _kafka(security_protocol="SASL_PLAINTEXT", sasl_mechanism="AWS_MSK_IAM", aws_region="eu-west-1")
    with pytest.raises(ValueError, match="aws_access_key_id and aws_secret_access_key go together"):
        _kafka(
            security_protocol="SASL_SSL",
            sasl_mechanism="AWS_MSK_IAM",
            aws_region="eu-west-1",
            aws_access_key_id=ACCESS_KEY,
        )


def test_oauthbearer_options_for_both_clients():
    kafka = _kafka(
        security_protocol="SASL_SSL",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauthbearer_token_endpoint_url="https://login.example.com/oauth2/token",
        sasl_oauthbearer_client_id="clearflow",
        sasl_oauthbearer_client_secret="s3cret",
        sasl_oauthbearer_scope="kafka",
        sasl_oauthbearer_extensions="logicalCluster=lkc-abc123, identityPoolId=pool-xyz",
    )
    options = kafka_connector_options(kafka)
    assert options["kafka.sasl.mechanism"] == "OAUTHBEARER"
    assert options["kafka.sasl.oauthbearer.token.endpoint.url"] == "https://login.example.com/oauth2/token"
    assert options["kafka.sasl.login.callback.handler.class"].endswith("oauthbearer.OAuthBearerLoginCallbackHandler")
    assert options["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'clientId="clearflow" clientSecret="s3cret" scope="kafka" '
        'extension_logicalCluster="lkc-abc123" extension_identityPoolId="pool-xyz";'
    )
    assert jvm_system_properties(kafka) == {
        "org.apache.kafka.sasl.oauthbearer.allowed.urls": "https://login.example.com/oauth2/token"
    }
    config = librdkafka_config(kafka)
    assert config["sasl.oauthbearer.method"] == "oidc"
    assert config["sasl.oauthbearer.client.secret"] == "s3cret"
    assert config["sasl.oauthbearer.extensions"] == "logicalCluster=lkc-abc123,identityPoolId=pool-xyz"


def test_aws_msk_iam_options_and_a_signed_token_from_static_keys():
    kafka = _kafka(
        bootstrap_servers="b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098",
        security_protocol="SASL_SSL",
        sasl_mechanism="AWS_MSK_IAM",
        aws_region="eu-west-1",
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )
    options = kafka_connector_options(kafka)
    assert options["kafka.sasl.mechanism"] == "AWS_MSK_IAM"
    assert options["kafka.sasl.jaas.config"] == "software.amazon.msk.auth.iam.IAMLoginModule required;"
    assert (
        options["kafka.sasl.client.callback.handler.class"] == "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
    )
    # Keys without a role: the SDK's default chain reads them from its system properties, set in the JVM.
    assert jvm_system_properties(kafka)["aws.accessKeyId"] == ACCESS_KEY
    role = _kafka(
        security_protocol="SASL_SSL",
        sasl_mechanism="AWS_MSK_IAM",
        aws_region="eu-west-1",
        aws_role_arn="arn:aws:iam::123456789012:role/clearflow",
    )
    assert (
        'awsRoleArn="arn:aws:iam::123456789012:role/clearflow"'
        in kafka_connector_options(role)["kafka.sasl.jaas.config"]
    )
    assert jvm_system_properties(role) == {}

    config = librdkafka_config(kafka)
    assert config["sasl.mechanism"] == "OAUTHBEARER"
    token, expiry = config["oauth_cb"]("")
    assert expiry > time.time() + 60
    url = urlparse(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode())
    query = parse_qs(url.query)
    assert url.hostname == "kafka.eu-west-1.amazonaws.com"
    assert query["Action"] == ["kafka-cluster:Connect"]
    assert (
        query["X-Amz-Credential"][0].startswith(f"{ACCESS_KEY}/")
        and "/eu-west-1/kafka-cluster/" in (query["X-Amz-Credential"][0])
    )
    assert SECRET_KEY not in token and msk_iam_token(kafka)[0]
