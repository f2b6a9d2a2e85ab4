"""One limit for every request that opens a connection to a server a user names: a connection test, a list of
topics, databases, tables or columns, a sample of events, key advice, a live check of a pipeline.

Each of them connects to a host and port the user chose, so each tells whether something listens there: without
one shared limit, the browse endpoints made a port scanner of the app where the connection test was limited.
`count_connection_request` counts one for the connection's owner in a fixed one-minute window in the cache
(shared by the UI, the API and every gunicorn worker when the cache is Redis) and raises TooManyRequestsError
(API 429 with `Retry-After` and a JSON body in words) past `settings.CONNECTION_REQUESTS_PER_MINUTE`.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.cache import cache

from webapp.core.exceptions import TooManyRequestsError

TOO_MANY = "Too many requests that connect to a server"  # how the UI tells this error from a server's (kinds.py)


def count_connection_request(user: AbstractBaseUser) -> None:
    """Count one request of `user` that opens a connection; TooManyRequestsError once over the minute's limit."""
    now = int(time.time())
    key = f"clearflow:connection-requests:{user.pk}:{now // 60}"
    cache.add(key, 0, timeout=70)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=70)
        count = 1
    limit = settings.CONNECTION_REQUESTS_PER_MINUTE
    if count > limit:
        wait = 60 - now % 60
        raise TooManyRequestsError(
            f"{TOO_MANY} (connection tests, lists of topics and tables, samples, key advice, live checks): at most "
            f"{limit} a minute. Try again in {wait} seconds.",
            extra={"retry_after": wait},
        )
