"""OpenAPI: how clients authenticate (drf-spectacular extension for our token class)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

# Answers any operation can give, whatever its view: the one exception handler makes them all the Error shape.
_COMMON = {
    "401": "Not authenticated.",
    "404": "No such object (or not yours), or a malformed id in the path.",
    "406": "The Accept header (or `?format=`) asks for a type the operation does not answer.",
    "429": "Too many requests; see Retry-After.",
}
# A browser session (cookie) that changes something must send its CSRF token (an API token needs none).
_UNSAFE = {"403": "A session without its CSRF token (send the X-CSRFToken header), or not allowed."}
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
                "An API token, sent as `Authorization: Token <token>`. Create one under Account > API tokens "
                "(or POST /api/v1/tokens/ while logged in); it is shown once. Only its hash is stored."
            ),
        }


def document_common_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every operation documents the errors every view can answer."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, item in result.get("paths", {}).items():
        if not path.startswith("/api/v1/") or path == "/api/v1/health":
            continue
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            extra = dict(_COMMON)
            if method.lower() in ("post", "put", "patch", "delete"):
                extra.update(_UNSAFE)
            if "requestBody" in operation:
                extra.update(_WITH_BODY)
            for status, description in extra.items():
                operation["responses"].setdefault(status, {"description": description, "content": error})
    return result
