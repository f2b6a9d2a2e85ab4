"""While PostgreSQL does not answer (restarting, stopped, out of connections), every page and API call answers
503 in words, with Retry-After, instead of a 500 with a stack trace in the log: nothing is wrong with the request
and nothing was changed; trying again once the database is back works.

`DatabaseDownMiddleware` answers for the views (DEBUG or not); `webapp.api.fallbacks.server_error` (Django's 500
handler) for an error raised outside a view, e.g. while the session is saved. The page is standalone: the site's
header reads the database (the user, the workspace menu).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
REASON = "The database (PostgreSQL) is not answering, so this request could not be answered. Nothing was changed."
EXPLANATION = (
    "It is most often restarting: try again in a few seconds. If it lasts, check that PostgreSQL runs and that "
    "DATABASE_URL points at it; the health page (/health) says which part of the stack is down. Running pipelines "
    "keep running meanwhile."
)


def database_unreachable(exc: BaseException | None) -> bool:
    """A connection that could not be made or was lost (not a query the database refused)."""
    return isinstance(exc, OperationalError | InterfaceError)


def database_down_response(request: HttpRequest, exc: BaseException | None) -> HttpResponse:
    log.warning("%s %s: the database is not answering (%s): answered 503", request.method, request.path, exc)
    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()  # the next request opens a new connection
    if request.path.startswith("/api/"):
        message = f"{REASON} {EXPLANATION}"
        response: HttpResponse = JsonResponse(
            {"code": "database_unavailable", "message": message, "errors": [{"path": "", "message": message}]},
            status=503,
        )
    else:
        html = render_to_string(
            "database_down.html", {"reason": REASON, "explanation": EXPLANATION, "request_path": request.path}
        )
        response = HttpResponse(html, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseDownMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if database_unreachable(exception):
            return database_down_response(request, exception)
        return None
