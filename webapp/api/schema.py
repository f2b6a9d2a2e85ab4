"""OpenAPI: how clients authenticate (drf-spectacular extension for our token class)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


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
