"""OpenAPI: how clients authenticate (drf-spectacular extension for our token class), the errors every operation
documents, and the schema's view (generated once per process)."""

from __future__ import annotations

import re
import threading
from typing import Any, ClassVar

from django.utils import translation
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response

# Answers any operation can give, whatever its view: the one exception handler makes them all the Error shape.
_COMMON = {
    "401": "Not authenticated.",
    "404": "No such object (or not yours), or a malformed id in the path.",
    "406": "The Accept header (or `?format=`) asks for a type the operation does not answer.",
    "429": "Too many requests; see Retry-After.",
}
# A change may be refused with 403: a read-only API token (webapp.api.permissions.TokenMayWrite), or a browser
# session (cookie) without its CSRF token (an API token needs none). Views that only read say so (`reads_only`).
_WRITES = {"403": "A read-only API token, or a session without its CSRF token (send the X-CSRFToken header)."}
_SESSION_CSRF = {"403": "A session without its CSRF token (send the X-CSRFToken header), or not allowed."}
_PATH_PARAMETER = re.compile(r"\{\w+\}")
_WITH_BODY = {
    "400": "Bad input: each problem with its field path.",
    "413": "The request body is too large.",
    "415": "The body is not JSON.",
}


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "webapp.api.tokens.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                "An API token, sent as `Authorization: Token <token>`. Create one on the web app's API tokens page "
                "(/account/tokens/, the link beside your workspace at the top right; or POST /api/v1/tokens/ while "
                "logged in); it is shown once. Only its hash is stored."
            ),
        }


class OidcBearerScheme(OpenApiAuthenticationExtension):
    target_class = "webapp.sso.authentication.OidcBearerAuthentication"
    name = "oidcBearer"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": (
                "An access token of the single sign-on provider, when one is configured (docs/teams.md): "
                "`Authorization: Bearer <token>`. It acts as its user, with the roles the user's groups map to."
            ),
        }


def document_common_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every operation documents the errors every view can answer."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    # Views that take a body but only read (validate, diff) say so with `reads_only = True`. The schema names path
    # parameters its own way ({pk} becomes {id}): paths are compared without their names.
    reads_only = {
        (_PATH_PARAMETER.sub("{}", path), method.upper())
        for path, _, method, callback in generator.endpoints or ()
        if getattr(getattr(callback, "cls", None), "reads_only", False)
    }
    for path, item in result.get("paths", {}).items():
        if not path.startswith("/api/v1/") or path == "/api/v1/health":
            continue
        shape = _PATH_PARAMETER.sub("{}", path)
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            extra = dict(_COMMON)
            if method.upper() not in SAFE_METHODS:
                extra.update(_SESSION_CSRF if (shape, method.upper()) in reads_only else _WRITES)
            if "requestBody" in operation:
                extra.update(_WITH_BODY)
            for status, description in extra.items():
                operation["responses"].setdefault(status, {"description": description, "content": error})
    return result


class SchemaApi(SpectacularAPIView):
    """The OpenAPI schema, generated once per process: it is the code's (the same for every caller), and
    generating it takes about 3 s of CPU, which the API docs page would otherwise wait for at each visit."""

    _generated: ClassVar[dict[tuple[str | None, str | None], Any]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def _get_schema_response(self, request: Any) -> Response:
        version = self.api_version or request.version or self._get_version_parameter(request)
        key = (version, translation.get_language())
        with self._lock:
            if key not in self._generated:
                generator = self.generator_class(urlconf=self.urlconf, api_version=version, patterns=self.patterns)
                self._generated[key] = generator.get_schema(request=request, public=self.serve_public)
        filename = self._get_filename(request, version)
        return Response(data=self._generated[key], headers={"Content-Disposition": f'inline; filename="{filename}"'})
