from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from webapp.health.checks import ComponentHealth, check_all


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
    body, status = _summary(check_all())
    return JsonResponse(body, status=status)


@never_cache
@require_GET
def health_page(request: HttpRequest) -> HttpResponse:
    results = check_all()
    body, status = _summary(results)
    template = "health/_components.html" if request.headers.get("HX-Request") else "health/health.html"
    return render(request, template, {"results": results, "summary": body}, status=status)
