"""Counts every answered request by view name and status code (`clearflow_http_requests_total`)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from webapp.monitoring.counters import count_request

# Requests that matched no URL (404s of scanners) share one label value: the label set stays bounded.
UNRESOLVED = "<unresolved>"


class RequestCountMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        view = match.view_name if match is not None else UNRESOLVED  # the URL name, else the view path
        count_request(view=view, status=response.status_code)
        return response
