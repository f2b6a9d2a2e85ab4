"""The error shape in the OpenAPI schema (see `exception_handlers`)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorItem(serializers.Serializer):
    path = serializers.CharField(
        help_text='The request field, e.g. "spec.sink.columns[2].type"; "" for the whole request.'
    )
    message = serializers.CharField()


class Error(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    errors = ErrorItem(many=True)
    extra = serializers.DictField(required=False)


ERROR_RESPONSES = {
    400: OpenApiResponse(Error, description="Bad input: each problem with its field path."),
    401: OpenApiResponse(Error, description="Not authenticated."),
    404: OpenApiResponse(Error, description="No such object (or not yours), topic, database or table."),
    409: OpenApiResponse(Error, description="The object's state does not allow the action."),
    502: OpenApiResponse(Error, description="Kafka or ClickHouse failed or did not answer in time."),
}


def error_responses(*media_types: str) -> dict[tuple[int, str], OpenApiResponse]:
    """ERROR_RESPONSES (and 429) for an operation whose errors are also rendered as `media_types`: the client's
    Accept header (or `?format=`) picks the renderer of an error body too."""
    responses = {**ERROR_RESPONSES, 429: OpenApiResponse(Error, description="Too many requests; see Retry-After.")}
    return {
        (status, media_type): response
        for status, response in responses.items()
        for media_type in ("application/json", *media_types)
    }
