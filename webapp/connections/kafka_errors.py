"""librdkafka's errors turned into one plain-words message, and the early end of a wait that cannot succeed.

librdkafka reports connection trouble through `error_cb` and its log, not through the failing call: a metadata
request that cannot succeed (wrong password, untrusted certificate, unknown host) just times out. The
collector keeps what was reported on the way, `wait_for_metadata` gives up as soon as one of those definite
failures is seen, and `plain_words` says what it means for the user, keeping librdkafka's text as the detail.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from typing import Any

# The broker name librdkafka puts in front of its messages ("sasl_ssl://host:9093/bootstrap: "): it says
# nothing the user did not type, and "sasl"/"ssl" in it must not be taken for the kind of failure.
_BROKER_NAME = re.compile(r"\b[a-z_]+://[^\s/]+/[\w-]+: ")
# A number of 6 digits or more in librdkafka's text may be bytes the far end sent, read as a length ("Invalid
# response size 1515280458" is "ZQXJ"): an answer never repeats them, so a connection test cannot read a banner.
_FAR_END_NUMBER = re.compile(r"\b\d{6,}\b")
# How long one metadata attempt may take before the errors seen so far are looked at.
ATTEMPT_SECONDS = 1.0


class ErrorCollector(logging.Handler):
    """librdkafka's `error_cb` and logger for one client: keeps what it reports, prints nothing.

    The admin client's metadata call fails with a bare "transport failure"; the error or log line seen on the
    way ("Connection refused", "Failed to resolve ...", "SASL authentication error") tells what is wrong.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.errors: list[Any] = []
        self.lines: list[str] = []
        # A private logger (not registered with logging's manager): nothing propagates to the root logger.
        self.logger = logging.Logger("clearflow.librdkafka", level=logging.DEBUG)
        self.logger.addHandler(self)
        self.logger.propagate = False

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            self.lines.append(record.getMessage())

    def __call__(self, error: Any) -> None:
        self.errors.append(error)

    def best(self) -> Any | None:
        """The most telling error seen: a definite one first, then any but "all brokers are down"."""
        from confluent_kafka import KafkaError

        telling = [e for e in self.errors if _code(e) != KafkaError._ALL_BROKERS_DOWN]
        definite = [e for e in telling if is_definite(e)]
        if definite or telling:
            return (definite or telling)[0]
        if self.lines:
            return self.lines[-1].split("]: ", 1)[-1]
        return None

    def definite(self) -> Any | None:
        return next((e for e in [*self.errors, *self.lines] if is_definite(e)), None)


def _code(error: Any) -> Any:
    return error.code() if hasattr(error, "code") else None


def _text(error: Any) -> str:
    text = error.str() if hasattr(error, "str") else str(error)
    text = re.sub(r"\s*\(after \d+ms in state \w+\)", "", text)
    text = re.sub(r"\s*\(0\.\.\d+\): increase receive\.message\.max\.bytes", "", text)
    return _FAR_END_NUMBER.sub("(not shown)", _BROKER_NAME.sub("", text)).strip()


def is_definite(error: Any) -> bool:
    """A failure that waiting will not cure: credentials, certificates, an unknown host, a refused port."""
    from confluent_kafka import KafkaError

    if _code(error) in (KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError._RESOLVE):
        return True
    return _kind(_text(error).lower()) not in (None, "transport")


def _kind(lowered: str) -> str | None:
    """What went wrong, from librdkafka's text (its error codes alone do not tell these apart)."""
    checks = [
        ("resolve", ("failed to resolve",)),
        ("refused", ("connection refused",)),
        ("not_kafka", ("invalid response size",)),
        ("token_endpoint", ("oidc token", "token endpoint", "oauthbearer token")),
        ("hostname", ("hostname mismatch", "ip address mismatch")),
        ("untrusted_broker", ("certificate verify failed",)),
        ("client_certificate", ("alert bad certificate", "certificate required", "alert unknown ca")),
        ("not_tls", ("connecting to a plaintext broker listener",)),
        ("credentials", ("authentication failed", "invalid username or password", "invalid credentials")),
        ("sasl_mechanism", ("supported mechanisms", "unsupported sasl mechanism", "current sasl state")),
        ("protocol_mismatch", ("incorrect security.protocol",)),
        ("tls", ("ssl handshake failed", "ssl routines", "ssl alert")),
        ("transport", ("disconnected", "transport failure")),
    ]
    for kind, needles in checks:
        if any(needle in lowered for needle in needles):
            return kind
    return None


# The step of opening a connection that failed, said first in every message: DNS, then TCP, then TLS, then
# SASL (with its token endpoint or KDC), then what the user may do.
STEPS = {
    "resolve": "DNS lookup failed",
    "refused": "TCP connection failed",
    "not_kafka": "Kafka handshake failed",
    "untrusted_broker": "TLS handshake failed (certificate)",
    "hostname": "TLS handshake failed (host name)",
    "client_certificate": "TLS handshake failed (client certificate)",
    "not_tls": "TLS handshake failed",
    "tls": "TLS handshake failed",
    "protocol_mismatch": "Handshake failed",
    "credentials": "SASL authentication failed",
    "sasl_mechanism": "SASL authentication failed",
    "token_endpoint": "Token endpoint failed",
    "authorization": "Authorization failed",
}


def plain_words(error: Any, *, servers: str, mechanism: str | None, timeout: float) -> str:
    """A message for the user from a librdkafka KafkaError (or a log line): what is wrong, then the detail."""
    from confluent_kafka import KafkaError

    code = _code(error)
    text = _text(error)
    kind = _kind(text.lower())
    if kind is None and code == KafkaError._AUTHENTICATION:
        kind = "credentials"
    messages = {
        "resolve": f"The broker host name in {servers} could not be resolved: check the spelling and that this "
        "server can look it up.",
        "refused": f"Nothing accepts connections at {servers} (connection refused).",
        "not_kafka": f"The server at {servers} does not answer in Kafka's protocol: check the host and port (is it a "
        "Kafka broker's listener?).",
        "untrusted_broker": f"The broker's TLS certificate at {servers} is not signed by the CA certificate given "
        "(or no CA certificate was given for a private CA).",
        "client_certificate": f"The broker at {servers} refused the TLS connection: it requires a client "
        "certificate signed by a CA it trusts (mutual TLS). Give the client certificate and its key.",
        "not_tls": f"The broker's listener at {servers} does not use TLS: choose security protocol PLAINTEXT or "
        "SASL_PLAINTEXT.",
        "credentials": f"The broker rejected the user name or password ({mechanism or 'SASL'}).",
        "sasl_mechanism": f"The broker at {servers} does not accept SASL {mechanism or ''} on this listener: check "
        "the security protocol and the SASL mechanism.".replace("  ", " "),
        "protocol_mismatch": f"The broker at {servers} closed the connection at once: the security protocol "
        "probably does not match the listener's (SSL or SASL expected?).",
        "tls": f"The TLS connection to {servers} failed.",
        "hostname": f"The broker's TLS certificate is not valid for the host name in {servers}: connect with a name "
        "the certificate lists (or have the certificate re-issued for this name).",
        "token_endpoint": "The OAuth token endpoint gave no token: check its URL, the client ID and secret, and the "
        "scope.",
    }
    if kind == "not_kafka":
        return f"{STEPS[kind]}: {messages[kind]}"  # what the server sent is not Kafka's: nothing of it is repeated
    if kind in messages:
        return f"{STEPS[kind]}: {messages[kind]} ({text})"
    if code in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN) or kind == "transport":
        # A connection opened and then closed without an answer: most often a listener that expects another
        # security protocol (a PLAINTEXT client on a TLS or SASL port), which librdkafka does not name.
        return (
            f"{STEPS['protocol_mismatch']}: Could not reach a broker at {servers}: the connection closed without an "
            f"answer. Check that the security protocol matches the broker's listener. ({text})"
        )
    if code == KafkaError._TIMED_OUT or "timed out" in text.lower():
        return f"{STEPS['refused']}: No broker at {servers} answered within {timeout:g} seconds."
    if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return f"The topic does not exist: {text}"
    if code in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED):
        return f"{STEPS['authorization']}: the user may not describe or read this on the cluster: {text}"
    return f"The broker answered with an error: {text}"


def explain(error: Any, collector: ErrorCollector, *, client: Any = None) -> Any:
    """The error to report: a timeout or transport failure says little, one seen on the way says more."""
    from confluent_kafka import KafkaError

    if client is not None:
        # Serves the queued error callbacks and log lines that explain a bare "transport failure".
        with contextlib.suppress(Exception):
            client.poll(0)
            if collector.best() is None:
                client.poll(0.2)
    if _code(error) in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, None) and collector.best() is not None:
        return collector.best()
    return error


def wait_for_metadata(client: Any, collector: ErrorCollector, timeout: float) -> Any:
    """`client.list_topics()` within `timeout`, but raise its KafkaException as soon as a definite failure
    (see `is_definite`) has been reported, instead of waiting for the whole timeout."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        try:
            return client.list_topics(timeout=max(0.05, min(ATTEMPT_SECONDS, remaining)))
        except KafkaException:
            with contextlib.suppress(Exception):
                client.poll(0)
            if remaining <= ATTEMPT_SECONDS or collector.definite() is not None:
                raise
