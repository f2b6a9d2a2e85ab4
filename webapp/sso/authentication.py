"""The provider's access tokens on the REST API: `Authorization: Bearer <access token>`.

A JWT is checked here against the provider's signing keys (its JWKS, fetched and cached by PyJWT's client):
signature, issuer, audience (`config.audience()`) and expiry. A token that is not a JWT (some providers hand out
opaque ones) is given to the provider's userinfo endpoint, which answers for it. Either way the token's subject
is the user (`services.sso_user_for_claims`, made on first sight, memberships from the token's groups).
"""

from __future__ import annotations

import threading
from typing import Any

import jwt
import requests
from django.core.exceptions import PermissionDenied
from rest_framework import authentication, exceptions

from webapp.sso import config, services

ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]
USERINFO_TIMEOUT = 10.0
# How far the provider's clock may be ahead or behind ours when a token's expiry is checked.
CLOCK_SKEW_SECONDS = 10

_jwk_clients: dict[str, jwt.PyJWKClient] = {}
_jwk_lock = threading.Lock()


def _jwk_client(url: str) -> jwt.PyJWKClient:
    with _jwk_lock:
        if url not in _jwk_clients:
            _jwk_clients[url] = jwt.PyJWKClient(url, cache_keys=True, lifespan=300, timeout=10)
        return _jwk_clients[url]


def _refused(reason: str) -> exceptions.AuthenticationFailed:
    return exceptions.AuthenticationFailed(
        f"The bearer token was refused: {reason}. Get a new access token from {config.provider_name()} "
        "(or use a ClearFlow API token: Authorization: Token cf_...)."
    )


def jwt_claims(token: str) -> dict[str, Any]:
    """The claims of a JWT access token the provider signed for this app; AuthenticationFailed otherwise."""
    try:
        jwks_url = config.endpoint("OIDC_OP_JWKS_ENDPOINT")
    except config.SsoConfigError as error:
        raise exceptions.AuthenticationFailed(str(error)) from error
    try:
        key = _jwk_client(str(jwks_url)).get_signing_key_from_jwt(token)
        return dict(
            jwt.decode(
                token,
                key.key,
                algorithms=ALGORITHMS,
                audience=config.audience(),
                issuer=config.issuer(),
                options={"require": ["exp", "iss", "sub"]},
                leeway=CLOCK_SKEW_SECONDS,
            )
        )
    except jwt.ExpiredSignatureError as error:
        raise _refused("it has expired") from error
    except jwt.InvalidAudienceError as error:
        raise _refused(f"it is not meant for ClearFlow (its audience is not {config.audience()!r})") from error
    except jwt.InvalidIssuerError as error:
        raise _refused(f"it was not issued by {config.issuer()}") from error
    except jwt.PyJWKClientConnectionError as error:
        raise exceptions.AuthenticationFailed(
            f"The provider's signing keys ({jwks_url}) could not be read: try again later."
        ) from error
    except (jwt.PyJWTError, ValueError) as error:
        raise _refused(f"it is not a valid token of the provider ({error})") from error


def userinfo_claims(token: str) -> dict[str, Any]:
    """The provider's userinfo answer for an opaque access token; AuthenticationFailed when it refuses it."""
    try:
        url = config.endpoint("OIDC_OP_USER_ENDPOINT")
        response = requests.get(str(url), headers={"Authorization": f"Bearer {token}"}, timeout=USERINFO_TIMEOUT)
    except (config.SsoConfigError, requests.RequestException) as error:
        raise exceptions.AuthenticationFailed(f"The provider could not be asked about the token: {error}") from error
    if response.status_code != 200:
        raise _refused(f"the provider answered HTTP {response.status_code} for it")
    try:
        return dict(response.json())
    except ValueError as error:
        raise _refused("the provider's userinfo answer is not JSON") from error


class OidcBearerAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>` from the configured provider; None (the next way) for anything else."""

    keyword = "Bearer"

    def authenticate(self, request: Any) -> tuple[Any, None] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if not config.enabled():
            raise exceptions.AuthenticationFailed(
                "Bearer tokens are taken only when single sign-on is configured: use a ClearFlow API token "
                "(Authorization: Token cf_...)."
            )
        if len(header) != 2:
            raise _refused("the header must be 'Bearer <token>', with no spaces in the token")
        try:
            token = header[1].decode()
        except UnicodeError as error:
            raise _refused("it holds characters a token cannot have") from error
        claims = jwt_claims(token) if token.count(".") == 2 else userinfo_claims(token)
        try:
            user = services.sso_user_for_claims(claims=claims)
        except PermissionDenied as error:  # a deactivated user, claims without a subject
            raise _refused(str(error)) from error
        return user, None

    def authenticate_header(self, request: Any) -> str:
        return f'{self.keyword} realm="api"'
