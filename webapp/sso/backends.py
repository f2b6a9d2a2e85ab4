"""The sign-in through the provider (mozilla-django-oidc's authorization code flow), its endpoints discovered
from the issuer and its user made by `services.sso_user_for_claims`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings

from webapp.sso import config, services


def oidc_setting(attr: str, *args: Any) -> Any:
    """mozilla-django-oidc's settings, with the provider's endpoints from its discovery document."""
    if attr in config.ENDPOINTS:
        return config.endpoint(attr)
    return import_from_settings(attr, *args)


class OidcBackend(OIDCAuthenticationBackend):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The provider's settings are read at a sign-in only: Django makes a backend for each request's session
        # user too (get_user), which must work while the provider is away or single sign-on is off.
        self.UserModel = get_user_model()

    get_settings = staticmethod(oidc_setting)

    def authenticate(self, request: Any, **kwargs: Any) -> Any:
        # Only the provider's callback signs in here: a password login (whatever its query string) never does.
        if not config.enabled() or request is None or request.path != reverse("oidc_authentication_callback"):
            return None
        super().__init__()  # the client and the provider's endpoints (discovered)
        return super().authenticate(request, **kwargs)

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        claims = {**self.get_userinfo(access_token, id_token, payload), **payload}
        try:
            return services.sso_user_for_claims(claims=claims)
        except PermissionDenied:
            return None
