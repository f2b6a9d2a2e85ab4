"""The health endpoint (`/api/v1/health`, JSON) and page (`/health`): open to everyone, 503 naming what is down.

The checks' results are cached for `HEALTH_CACHE_SECONDS`: a burst of anonymous calls (a load balancer, a
curious crawler) runs the checks once, instead of tying up a worker per call while a component times out.
Anonymous callers see up/down and the failures' reasons; versions and counts only go to logged-in users.
"""

from __future__ import annotations

from dataclasses import replace

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from webapp.health.checks import ComponentHealth, check_all

HEALTH_CACHE_SECONDS = 5
_CACHE_KEY = "clearflow:health"


def _results(request: HttpRequest) -> list[ComponentHealth]:
    results = cache.get(_CACHE_KEY)
    if results is None:
        results = check_all()
        cache.set(_CACHE_KEY, results, timeout=HEALTH_CACHE_SECONDS)
    if request.user.is_authenticated:
        return results
    return [replace(result, detail="answers") if result.ok else result for result in results]


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
