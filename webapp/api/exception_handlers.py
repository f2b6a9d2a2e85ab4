"""One JSON error shape for every API error (HackSoft's exception handler, extended for SpecError).

    {"code": "invalid", "message": "...", "errors": [{"path": "spec.sink.columns[2].type", "message": "..."}]}

`errors` lists the problems with the request's field path ("" for the request as a whole). Handled:
DRF's own exceptions (validation, authentication, 404, 405, 415, parse errors), Django's
`ValidationError`, `Http404` and `PermissionDenied`, `clearflow_spec.spec.SpecError` (paths prefixed
with `spec.`, the request field that carried the spec) and `ApplicationError` (its `status_code`).
Anything else is a bug and propagates (a 500).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import set_rollback

from clearflow_spec.spec import SpecError
from webapp.core.exceptions import ApplicationError

SPEC_FIELD = "spec"


def _join(prefix: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    key = str(key)
    if key in (api_settings.NON_FIELD_ERRORS_KEY, NON_FIELD_ERRORS):
        return prefix
    return f"{prefix}.{key}" if prefix else key


def flatten_errors(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    """DRF/Django error structures -> [{"path", "message"}], nested dicts and lists turned into paths."""
    if isinstance(detail, dict):
        out: list[dict[str, str]] = []
        for key, value in detail.items():
            out.extend(flatten_errors(value, _join(prefix, key)))
        return out
    if isinstance(detail, list | tuple):
        out = []
        # A list of messages for one field, or a list of per-item error structures.
        if all(isinstance(item, str | exceptions.ErrorDetail) for item in detail):
            return [{"path": prefix, "message": str(item)} for item in detail]
        for index, item in enumerate(detail):
            if item in ({}, [], None):
                continue
            out.extend(flatten_errors(item, _join(prefix, index)))
        return out
    return [{"path": prefix, "message": str(detail)}]


def _response(status_code: int, code: str, message: str, errors: list[dict[str, str]], **extra: Any) -> Response:
    body: dict[str, Any] = {"code": code, "message": message, "errors": errors}
    if extra:
        body["extra"] = extra
    return Response(body, status=status_code)


SPEC_INVALID = "The pipeline spec is not valid."


def spec_path(path: str) -> str:
    """A spec problem's path as the API names it (`spec.sink.columns[2].type`)."""
    if not path:
        return SPEC_FIELD
    return f"{SPEC_FIELD}{path}" if path.startswith("[") else f"{SPEC_FIELD}.{path}"


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)  # the policy's sentence, when it gave one

    if isinstance(exc, SpecError):
        set_rollback()
        errors = [{"path": spec_path(issue.path), "message": issue.message} for issue in exc.errors]
        # A SpecError may carry a JSON-able report (the sample check's, `webapp.pipelines.type_fit`).
        extra = getattr(exc, "extra", None) or {}
        return _response(status.HTTP_400_BAD_REQUEST, "invalid_spec", SPEC_INVALID, errors, **extra)

    if isinstance(exc, DjangoValidationError):
        set_rollback()
        detail = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        errors = flatten_errors(detail)
        return _response(status.HTTP_400_BAD_REQUEST, "invalid", errors[0]["message"] if errors else "Invalid.", errors)

    if isinstance(exc, ApplicationError):
        set_rollback()
        response = _response(
            exc.status_code, exc.code, exc.message, [{"path": "", "message": exc.message}], **exc.extra
        )
        if "retry_after" in exc.extra:
            response["Retry-After"] = str(exc.extra["retry_after"])
        return response

    if isinstance(exc, exceptions.APIException):
        set_rollback()
        headers: dict[str, str] = {}
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
        if getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(exc.wait))  # type: ignore[attr-defined]
        if isinstance(exc, exceptions.ValidationError):
            errors = flatten_errors(exc.detail)
            message = "The request is not valid." if errors else "Invalid."
            code = "invalid"
        else:
            message = str(exc.detail) if not isinstance(exc.detail, dict | list) else exc.default_detail
            errors = [{"path": "", "message": str(message)}]
            codes = exc.get_codes()
            code = codes if isinstance(codes, str) else exc.default_code
        response = _response(exc.status_code, code, str(message), errors)
        for name, value in headers.items():
            response[name] = value
        return response
    return None
