"""What an authenticated request may do beyond being logged in: a read-only API token reads, never changes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.permissions import SAFE_METHODS, BasePermission

from webapp.api.models import ApiToken

if TYPE_CHECKING:  # DRF's views import the authentication classes, which import this module's neighbours
    from rest_framework.request import Request
    from rest_framework.views import APIView


class TokenMayWrite(BasePermission):
    """A read-only token gets 403 for every request that could change something: any method but GET, HEAD and
    OPTIONS, except on views that only read although they take a body (`reads_only = True`: validate, diff).

    Checked before the view looks anything up, so the answer says nothing about what exists."""

    message = "This API token is read-only: it cannot change anything. Use a token created without 'read only'."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not token_is_read_only(request):
            return True
        return request.method in SAFE_METHODS or getattr(view, "reads_only", False)


def token_is_read_only(request: Request) -> bool:
    """Whether the request comes with a read-only API token (a logged-in browser or a full token: False)."""
    return isinstance(request.auth, ApiToken) and request.auth.read_only
