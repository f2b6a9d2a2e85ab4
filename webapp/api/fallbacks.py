"""Errors that happen before a DRF view runs (an unknown URL, a crash) in the API's JSON shape.

Django answers those itself, with HTML pages; an API client under /api/ gets the same JSON body as from
`exception_handlers.api_exception_handler` instead. Every other path gets ClearFlow's pages for a 404 and a 403
(`webapp.core.error_pages`: the header, the reason in words, a way back) and Django's for the rest; a 500
that is PostgreSQL not answering is a 503 in words (`webapp.core.database_down`).
"""

from __future__ import annotations

import sys

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from webapp.core import error_pages
from webapp.core.database_down import database_down_response, database_unreachable

API_PREFIX = "/api/"


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"code": code, "message": message, "errors": [{"path": "", "message": message}]}, status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        if isinstance(exception, RequestDataTooBig):
            return _error(413, "too_large", "The request body is larger than the server accepts.")
        return _error(400, "bad_request", "The request could not be read.")
    return defaults.bad_request(request, exception)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return _error(404, "not_found", f"No API operation at {request.path}; see /api/v1/docs/.")
    return error_pages.not_found_page(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return _error(403, "permission_denied", "You do not have permission to perform this action.")
    return error_pages.permission_denied_page(request, exception)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: the API's views check CSRF themselves (DRF); this answers for the rest."""
    if request.path.startswith(API_PREFIX):
        return _error(403, "permission_denied", f"CSRF check failed: {reason}")
    return error_pages.csrf_failure_page(request, reason)


def server_error(request: HttpRequest) -> HttpResponse:
    exc = sys.exc_info()[1]  # Django calls its 500 handler inside the except block of the error
    if database_unreachable(exc):
        return database_down_response(request, exc)
    if request.path.startswith(API_PREFIX):
        return _error(500, "server_error", "The server failed to answer this request; the error is in its log.")
    return defaults.server_error(request)
