"""`GET /metrics`: the OpenMetrics exposition for a Prometheus scrape, behind a bearer token.

Disabled (404) unless `CLEARFLOW_METRICS_TOKEN` is set; a missing token is 401, a wrong one 403. The token is
compared in constant time and never logged. A registry is built per scrape: nothing global fills up at import.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST, generate_latest

from webapp.monitoring.collector import ClearFlowCollector

_BEARER = "bearer "


def _refusal(status: int, message: str) -> HttpResponse:
    response = HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    expected = settings.CLEARFLOW_METRICS_TOKEN
    if not expected:
        raise Http404("Metrics are disabled (set CLEARFLOW_METRICS_TOKEN).")
    header = request.headers.get("Authorization", "")
    if header[: len(_BEARER)].lower() != _BEARER:
        return _refusal(401, "A bearer token is required.")
    given = header[len(_BEARER) :].strip()
    if not hmac.compare_digest(given.encode(), expected.encode()):
        return _refusal(403, "Wrong token.")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ClearFlowCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
