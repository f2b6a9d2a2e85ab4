"""Secured listeners for the test broker: SASL PLAIN, SCRAM-SHA-256/512, TLS and mutual TLS, for real.

The session's one Apache Kafka broker (tests/conftest.py) listens on these besides PLAINTEXT, with
certificates from a CA generated here (`cryptography`), so every security mode is exercised against the real
broker without starting one broker per mode. SCRAM users are created through the Admin API
(AlterUserScramCredentials) once the broker runs, as on a real cluster.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from localstack.kafka_listener import KafkaListener
from localstack.processes import free_port, wait_until
from tests.kerberos_kdc import BROKER_PRINCIPAL, CLIENT_PRINCIPAL, TestRealm

PLAIN_USER, PLAIN_PASSWORD = "plain-alice", "plain-alice-secret"
SCRAM_USERS = {"SCRAM-SHA-256": ("scram256-bob", "scram-bob-secret"), "SCRAM-SHA-512": ("scram512-carol", "carol-pw")}
MODES = ("sasl_plain", "scram_sha_256", "scram_sha_512", "ssl", "mtls")


@dataclass(frozen=True)
class KeyPair:
    certificate_pem: str
    key_pem: str = field(repr=False)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    # PKCS#8, unencrypted: what both librdkafka (`ssl.key.pem`) and Kafka's PEM keystore read.
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def make_ca(common_name: str) -> tuple[KeyPair, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return KeyPair(certificate.public_bytes(serialization.Encoding.PEM).decode(), _key_pem(key)), key


def issue(ca: KeyPair, ca_key: ec.EllipticCurvePrivateKey, common_name: str, *, server: bool) -> KeyPair:
    """A leaf certificate signed by `ca`: for the broker (valid for 127.0.0.1 and localhost) or a client."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    ca_certificate = x509.load_pem_x509_certificate(ca.certificate_pem.encode())
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
    certificate = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(certificate.public_bytes(serialization.Encoding.PEM).decode(), _key_pem(key))


@dataclass(frozen=True)
class BrokerSecurity:
    """The secured listeners of the test broker and the key material its clients need."""

    ports: dict[str, int]  # mode -> port
    ca: KeyPair
    broker: KeyPair
    client: KeyPair  # signed by `ca`: accepted by the mTLS listener
    unknown_ca: KeyPair  # a CA the broker's certificate does not chain to
    host: str = "127.0.0.1"
    # The Kerberos realm of the GSSAPI listener (tests.kerberos_kdc); None where krb5-kdc is not installed.
    kerberos: TestRealm | None = None

    @classmethod
    def generate(cls, *, kerberos: TestRealm | None = None) -> BrokerSecurity:
        ca, ca_key = make_ca("ClearFlow test CA")
        unknown_ca, _ = make_ca("Some other CA")
        return cls(
            kerberos=kerberos,
            ports={mode: free_port() for mode in ("sasl_plain", "scram", "ssl", "mtls", "gssapi", "sasl_ssl")},
            ca=ca,
            broker=issue(ca, ca_key, "localhost", server=True),
            client=issue(ca, ca_key, "clearflow-client", server=False),
            unknown_ca=unknown_ca,
        )

    def listeners(self) -> list[KafkaListener]:
        tls = {"ssl_certificate_chain_pem": self.broker.certificate_pem, "ssl_key_pem": self.broker.key_pem}
        return [
            KafkaListener(
                name="SASL_PLAIN",
                port=self.ports["sasl_plain"],
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanisms=("PLAIN",),
                plain_users={PLAIN_USER: PLAIN_PASSWORD},
            ),
            KafkaListener(
                name="SASL_SCRAM",
                port=self.ports["scram"],
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanisms=tuple(SCRAM_USERS),
            ),
            KafkaListener(name="TLS", port=self.ports["ssl"], security_protocol="SSL", **tls),
            KafkaListener(
                name="SASL_TLS",
                port=self.ports["sasl_ssl"],
                security_protocol="SASL_SSL",
                sasl_mechanisms=tuple(SCRAM_USERS),
                **tls,
            ),
            KafkaListener(
                name="MTLS",
                port=self.ports["mtls"],
                security_protocol="SSL",
                ssl_client_ca_pem=self.ca.certificate_pem,
                **tls,
            ),
            *(
                [
                    KafkaListener(
                        name="SASL_GSSAPI",
                        port=self.ports["gssapi"],
                        security_protocol="SASL_PLAINTEXT",
                        sasl_mechanisms=("GSSAPI",),
                        kerberos_principal=BROKER_PRINCIPAL,
                        kerberos_keytab=str(self.kerberos.broker_keytab),
                    )
                ]
                if self.kerberos
                else []
            ),
        ]

    def connection(self, mode: str) -> dict[str, Any]:
        """The saved-connection fields (the REST API's names) that reach the broker in `mode`."""
        if mode == "sasl_plain":
            return self._sasl("sasl_plain", "PLAIN", PLAIN_USER, PLAIN_PASSWORD)
        if mode in ("scram_sha_256", "scram_sha_512"):
            mechanism = mode.upper().replace("_", "-")
            return self._sasl("scram", mechanism, *SCRAM_USERS[mechanism])
        if mode == "sasl_ssl_scram":  # SCRAM over TLS, the broker's certificate from the private CA
            return {
                **self._sasl("sasl_ssl", "SCRAM-SHA-512", *SCRAM_USERS["SCRAM-SHA-512"]),
                "security_protocol": "SASL_SSL",
                "ssl_ca_pem": self.ca.certificate_pem,
            }
        if mode == "gssapi":
            if self.kerberos is None:
                raise RuntimeError("no Kerberos realm: install krb5-kdc (bash localstack/system-deps.sh)")
            return {
                "bootstrap_servers": self.address("gssapi"),
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "GSSAPI",
                "sasl_kerberos_principal": CLIENT_PRINCIPAL,
                "sasl_kerberos_keytab": self.kerberos.client_keytab_base64(),
                "sasl_kerberos_realm": self.kerberos.realm,
                "sasl_kerberos_kdc": self.kerberos.kdc,
            }
        if mode == "ssl":
            return {
                "bootstrap_servers": self.address("ssl"),
                "security_protocol": "SSL",
                "ssl_ca_pem": self.ca.certificate_pem,
            }
        if mode == "mtls":
            return {
                "bootstrap_servers": self.address("mtls"),
                "security_protocol": "SSL",
                "ssl_ca_pem": self.ca.certificate_pem,
                "ssl_certificate_pem": self.client.certificate_pem,
                "ssl_key_pem": self.client.key_pem,
            }
        raise ValueError(f"unknown security mode {mode!r}")

    def address(self, listener: str) -> str:
        return f"{self.host}:{self.ports[listener]}"

    def _sasl(self, listener: str, mechanism: str, username: str, password: str) -> dict[str, Any]:
        return {
            "bootstrap_servers": self.address(listener),
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_username": username,
            "sasl_password": password,
        }


def create_scram_users(plaintext_bootstrap: str, security: BrokerSecurity) -> None:
    """Create the SCRAM users through the Admin API and wait until each can log in."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": plaintext_bootstrap})
    upserts = [
        UserScramCredentialUpsertion(
            user, ScramCredentialInfo(getattr(ScramMechanism, mechanism.replace("-", "_")), 4096), password.encode()
        )
        for mechanism, (user, password) in SCRAM_USERS.items()
    ]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(timeout=10)
    for mode in ("scram_sha_256", "scram_sha_512"):
        assert wait_until(lambda mode=mode: _can_list_topics(security.connection(mode)), timeout=15), mode


def _can_list_topics(connection: dict[str, Any]) -> bool:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    config = {
        "bootstrap.servers": connection["bootstrap_servers"],
        "security.protocol": connection["security_protocol"],
        "sasl.mechanism": connection["sasl_mechanism"],
        "sasl.username": connection["sasl_username"],
        "sasl.password": connection["sasl_password"],
    }
    try:
        AdminClient(config).list_topics(timeout=2)
        return True
    except KafkaException:
        return False
