"""A secured client listener of the local Kafka broker (`localstack.service_defs.kafka_broker`): its security
settings as the broker's `listener.name.<name>.*` properties."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class KafkaListener:
    """A client listener besides the broker's PLAINTEXT one, with its own security settings.

    SASL: `sasl_mechanisms` among PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI and OAUTHBEARER. PLAIN users and
    their passwords are `plain_users` (written into the listener's JAAS configuration); SCRAM users live in the
    cluster's metadata and are created after start through the Admin API (AlterUserScramCredentials).
    SSL: the broker's certificate chain and key in PEM; with `ssl_client_ca_pem` set, clients must present a
    certificate signed by that CA (mutual TLS).
    """

    name: str  # upper case, e.g. "SASL_PLAIN"; unique on the broker
    port: int
    security_protocol: str  # SASL_PLAINTEXT, SSL or SASL_SSL
    sasl_mechanisms: Sequence[str] = ()
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)
    ssl_certificate_chain_pem: str | None = None
    ssl_key_pem: str | None = field(default=None, repr=False)
    ssl_client_ca_pem: str | None = None
    # GSSAPI: the broker's service principal (e.g. kafka/localhost@REALM) and its keytab file. The JVM finds the
    # realm's KDC in the krb5.conf given to `kafka_broker(java_properties={"java.security.krb5.conf": ...})`.
    kerberos_principal: str | None = None
    kerberos_keytab: str | None = None
    # OAUTHBEARER: the broker checks each token's signature against the provider's JWKS (Kafka's own
    # OAuthBearerValidatorCallbackHandler), and its issuer. Kafka 4 fetches only from URLs a JVM-wide property
    # allows: `kafka_broker(java_properties={"org.apache.kafka.sasl.oauthbearer.allowed.urls": jwks_url})`.
    oauth_jwks_url: str | None = None
    oauth_issuer: str | None = None

    def properties(self) -> dict[str, str]:
        """This listener's `listener.name.<name>.*` broker settings."""
        prefix = f"listener.name.{self.name.lower()}."
        settings: dict[str, str] = {}
        if self.sasl_mechanisms:
            settings[f"{prefix}sasl.enabled.mechanisms"] = ",".join(self.sasl_mechanisms)
        for mechanism in self.sasl_mechanisms:
            if mechanism == "GSSAPI":
                # An acceptor only (isInitiator=false): it reads its key from the keytab and never asks the KDC.
                module = (
                    "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
                    f'isInitiator=false keyTab="{self.kerberos_keytab}" principal="{self.kerberos_principal}";'
                )
                service = (self.kerberos_principal or "kafka/").split("/", 1)[0]
                settings[f"{prefix}sasl.kerberos.service.name"] = service
            elif mechanism == "OAUTHBEARER":
                module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
                settings[f"{prefix}oauthbearer.sasl.server.callback.handler.class"] = (
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
                )
                settings[f"{prefix}sasl.oauthbearer.jwks.endpoint.url"] = self.oauth_jwks_url or ""
                if self.oauth_issuer:
                    settings[f"{prefix}sasl.oauthbearer.expected.issuer"] = self.oauth_issuer
            elif mechanism == "PLAIN":
                users = " ".join(f'user_{user}="{password}"' for user, password in self.plain_users.items())
                module = f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
            else:
                module = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            settings[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = module
        if self.ssl_certificate_chain_pem and self.ssl_key_pem:
            settings[f"{prefix}ssl.keystore.type"] = "PEM"
            settings[f"{prefix}ssl.keystore.certificate.chain"] = self.ssl_certificate_chain_pem
            settings[f"{prefix}ssl.keystore.key"] = self.ssl_key_pem
        if self.ssl_client_ca_pem:
            settings[f"{prefix}ssl.truststore.type"] = "PEM"
            settings[f"{prefix}ssl.truststore.certificates"] = self.ssl_client_ca_pem
            settings[f"{prefix}ssl.client.auth"] = "required"
        return settings
