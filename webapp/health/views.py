"""The health endpoint (`/api/v1/health`, JSON) and page (`/health`): open to everyone, 503 naming what is down.

The checks' results are cached for `HEALTH_CACHE_SECONDS`: a burst of anonymous calls (a load balancer, a
curious crawler) runs the checks once, instead of tying up a worker per call while a component times out.
Anonymous callers see up/down and the failures' reasons; versions and counts only go to logged-in users and to
API token holders.
"""

from __future__ import annotations

from dataclasses import replace

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.settings import api_settings

from webapp.health.checks import ComponentHealth, check_all

HEALTH_CACHE_SECONDS = 5
_CACHE_KEY = "clearflow:health"


def _results(request: HttpRequest) -> list[ComponentHealth]:
    results = cache.get(_CACHE_KEY)
    if results is None:
        results = check_all()
        cache.set(_CACHE_KEY, results, timeout=HEALTH_CACHE_SECONDS)
    if _caller_is_known(request):
        return results
    return [replace(result, detail="answers") if result.ok else result for result in results]


def _caller_is_known(request: HttpRequest) -> bool:
    """A logged-in browser or an API token (the API's own authenticators: an engineer's monitoring script)."""
    if request.user.is_authenticated:
        return True
    drf_request = Request(request, authenticators=[auth() for auth in api_settings.DEFAULT_AUTHENTICATION_CLASSES])
    try:
        return bool(drf_request.user and drf_request.user.is_authenticated)
    except exceptions.AuthenticationFailed:
        return False


def _summary(results: list[ComponentHealth]) -> tuple[dict[str, object], int]:
    down = [result.name for result in results if not result.ok]
    body = {
        "status": "ok" if not down else "down",
        "down": down,
        "components": {result.name: result.as_dict() for result in results},
    }
    return body, 200 if not down else 503


@never_cache
@require_GET
def health_api(request: HttpRequest) -> JsonResponse:
    body, status = _summary(_results(request))
    return JsonResponse(body, status=status)


@never_cache
@require_GET
def health_page(request: HttpRequest) -> HttpResponse:
    results = _results(request)
    body, status = _summary(results)
    template = "health/_components.html" if request.headers.get("HX-Request") else "health/health.html"
    return render(request, template, {"results": results, "summary": body}, status=status)
