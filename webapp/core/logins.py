"""Login throttling (django-axes): where the client's address comes from, and the two lockout limits.

Axes counts failed logins per lockout parameter set (`AXES_LOCKOUT_PARAMETERS`): per user name *and* address
(someone guessing one user's password) and per address across user names (one address trying one password
against every user: password spraying). It compares the larger of those counts with one limit, and the count
per address is never the smaller; `failure_limit` gives each set its own limit: the per-user limit once that
user and address have reached it, else the (higher) per-address limit.

The client's address: `REMOTE_ADDR`, unless the app runs behind `CLEARFLOW_PROXY_COUNT` reverse proxies (nginx
in docker-compose: 1). Each proxy appends the address it saw to `X-Forwarded-For` (nginx:
`$proxy_add_x_forwarded_for`), so the client is the entry that many places from the right; entries further left
came from the client and are not trusted. The web app must then be reachable only through those proxies.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str | None:
    """The client's address as the nearest trusted proxy saw it (`AXES_CLIENT_IP_CALLABLE`)."""
    remote = request.META.get("REMOTE_ADDR")
    count = settings.CLEARFLOW_PROXY_COUNT
    if count <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < count:
        return remote  # not through all the proxies: the peer itself is the client
    return forwarded[-count]


def failure_limit(request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
    """`AXES_FAILURE_LIMIT`: LOGIN_FAILURES_PER_USER for a user name and address that reached it, else
    LOGIN_FAILURES_PER_ADDRESS (the failures of every user name from the address)."""
    from axes.attempts import get_cool_off_threshold
    from axes.helpers import get_client_username
    from axes.models import AccessAttempt

    per_user = settings.LOGIN_FAILURES_PER_USER
    username = get_client_username(request, credentials)
    address = getattr(request, "axes_ip_address", None) or client_address(request)
    if username is not None and address:
        failures = (
            AccessAttempt.objects.filter(
                username=username, ip_address=address, attempt_time__gte=get_cool_off_threshold(request)
            ).aggregate(total=Sum("failures_since_start"))["total"]
            or 0
        )
        if failures >= per_user:
            return per_user
    return settings.LOGIN_FAILURES_PER_ADDRESS
