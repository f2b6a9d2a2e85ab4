"""Sending one notification on one channel: email through Django's mail settings, webhooks as a JSON POST.

Errors are sorted the way the delivery task needs them (healthchecks' transports do the same): a
`RetryableDeliveryError` (timeouts, connection errors, HTTP 5xx and 429, SMTP 4xx) is tried again with backoff; a
`PermanentDeliveryError` (other HTTP 4xx, SMTP 5xx, a host in a forbidden network) is recorded and not retried.
No message here ever holds the webhook URL: it is a secret (the credential is usually in its path).
"""

from __future__ import annotations

import json
import smtplib
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMessage

from webapp.alerts.errors import PermanentDeliveryError, RetryableDeliveryError
from webapp.alerts.models import AlertChannel, ChannelKind, WebhookFormat
from webapp.connections.network_guard import host_error


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect could lead past the network guard: it is answered as the status it is (a 3xx is not success)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def send(channel: AlertChannel, *, subject: str, text: str, payload: dict[str, Any]) -> None:
    if channel.kind == ChannelKind.EMAIL:
        send_email(channel, subject=subject, text=text)
    else:
        body = {"text": text} if channel.webhook_format == WebhookFormat.SLACK else payload
        send_webhook(channel, body=body)


def send_email(channel: AlertChannel, *, subject: str, text: str) -> None:
    recipients = channel.recipients
    if not recipients:
        raise PermanentDeliveryError("The channel has no email address.")
    message = EmailMessage(subject=subject, body=text, from_email=settings.DEFAULT_FROM_EMAIL, to=recipients)
    try:
        message.send(fail_silently=False)
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        error = f"The mail server refused the recipients ({', '.join(str(c) for c in codes)})."
        retryable = any(400 <= c < 500 for c in codes)
        raise (RetryableDeliveryError if retryable else PermanentDeliveryError)(error) from None
    except smtplib.SMTPResponseException as exc:
        error = f"The mail server answered {exc.smtp_code}."
        raise (RetryableDeliveryError if 400 <= exc.smtp_code < 500 else PermanentDeliveryError)(error) from None
    except (smtplib.SMTPException, OSError) as exc:  # disconnected, refused, timed out, DNS
        raise RetryableDeliveryError(f"The mail server could not be reached: {type(exc).__name__}.") from None


def send_webhook(channel: AlertChannel, *, body: dict[str, Any]) -> None:
    url = channel.webhook_url
    host = urlsplit(url).hostname or ""
    if problem := host_error(host):
        raise PermanentDeliveryError(problem)
    request = urllib.request.Request(  # noqa: S310 - the scheme is checked (http/https) when the channel is saved
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "ClearFlow-alerts/1"},
    )
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=settings.ALERT_HTTP_TIMEOUT_SECONDS) as response:
            response.read(1024)
    except urllib.error.HTTPError as exc:
        code = exc.code
        error = f"The webhook answered HTTP {code}."
        if code >= 500 or code == 429:
            raise RetryableDeliveryError(error) from None
        raise PermanentDeliveryError(error) from None
    except OSError as exc:  # URLError, timeouts and connection errors are all OSErrors
        reason = getattr(exc, "reason", exc)
        kind = "timed out" if isinstance(reason, TimeoutError) else "could not be reached"
        raise RetryableDeliveryError(f"The webhook {kind} ({type(reason).__name__}).") from None
