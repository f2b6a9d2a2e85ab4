"""What the key advice, sample, schema inference and live check endpoints answer now that the worker reads the events
(`webapp.connections.heavy_requests`): `202 Accepted` with the URL to poll, then, at that URL, 202 again while the
events are read, the answer (200) once they are, or the error the request met (its status and JSON body).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from webapp.api.errors import ERROR_RESPONSES, Error
from webapp.connections.models import HeavyRequest

POLL_AFTER_SECONDS = 1


class HeavyRequestOutput(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(["queued", "running"])
    progress = serializers.CharField(help_text="What the worker is doing, in words.")
    url = serializers.URLField(help_text="GET it until it answers 200 (the result) or an error.")


def accepted_responses(result: Any, what: str) -> dict[int, Any]:
    """The poll operation's responses in the OpenAPI schema."""
    return {
        200: OpenApiResponse(result, description=f"{what}: the result."),
        202: OpenApiResponse(HeavyRequestOutput, description="Still reading the events: ask again (Retry-After)."),
        **ERROR_RESPONSES,
        429: OpenApiResponse(Error, description="Too many requests; see Retry-After."),
    }


START_RESPONSES = {
    202: OpenApiResponse(
        HeavyRequestOutput,
        description="Accepted: the worker reads the events. GET `url` (also the Location header) for the result.",
    ),
    **ERROR_RESPONSES,
    429: OpenApiResponse(
        Error, description="Too many requests at once (or a minute) for you or the workspace; see Retry-After."
    ),
}


def _pending(request: Request, heavy: HeavyRequest, url_name: str, url_kwargs: dict[str, Any] | None) -> Response:
    kwargs = {"pk": heavy.connection_id} if url_kwargs is None else url_kwargs
    url = reverse(url_name, kwargs={**kwargs, "request_id": heavy.pk}, request=request)
    body = {"id": heavy.pk, "status": heavy.status, "progress": heavy.progress, "url": url}
    response = Response(HeavyRequestOutput(body).data, status=202, headers={"Location": url})
    response["Retry-After"] = str(POLL_AFTER_SECONDS)
    return response


def accepted(
    request: Request, heavy: HeavyRequest, url_name: str, *, url_kwargs: dict[str, Any] | None = None
) -> Response:
    """202 with the URL to poll: `url_name` with `url_kwargs` (by default the connection's `pk`) and the
    request's id."""
    return _pending(request, heavy, url_name, url_kwargs)


def answer(
    request: Request,
    heavy: HeavyRequest,
    url_name: str,
    output: type[serializers.Serializer],
    *,
    part: str = "",
    url_kwargs: dict[str, Any] | None = None,
) -> Response:
    """The poll's answer: 202 while it runs, the error's status and body if it failed, else 200 with `output` of
    the result (of its `part` when named)."""
    if heavy.status == HeavyRequest.Status.FAILED:
        error = heavy.error or {}
        body: dict[str, Any] = {
            "code": error.get("code", "application_error"),
            "message": error.get("message", ""),
            "errors": error.get("errors") or [{"path": "", "message": error.get("message", "")}],
        }
        if error.get("extra"):
            body["extra"] = error["extra"]
        response = Response(body, status=error.get("status_code", 400))
        if "retry_after" in (error.get("extra") or {}):
            response["Retry-After"] = str(error["extra"]["retry_after"])
        return response
    if heavy.status != HeavyRequest.Status.DONE:
        return _pending(request, heavy, url_name, url_kwargs)
    result = heavy.result[part] if part else heavy.result
    return Response(output(result, many=isinstance(result, list)).data)
