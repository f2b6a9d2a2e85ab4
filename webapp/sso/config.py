"""Single sign-on's configuration, read from the settings when asked (`webapp.config.settings.sso` fills them
from the environment), and the provider's endpoints from its discovery document.

`CLEARFLOW_OIDC_GROUP_ROLES` maps the provider's groups to workspace roles: comma-separated entries
`GROUP:WORKSPACE:ROLE`, e.g. `data-team:Data team:admin, analysts:Data team:viewer`. The group is everything
before the first colon and the role after the last one, so a workspace name may itself hold colons.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import requests
from django.conf import settings

from webapp.workspaces.models import Role

DISCOVERY_TIMEOUT = 10.0


class SsoConfigError(ValueError):
    """The group mapping or the provider's configuration is wrong; the message says what to change."""


@dataclass(frozen=True)
class GroupRole:
    group: str
    workspace: str
    role: Role


def parse_group_roles(text: str) -> list[GroupRole]:
    entries = []
    for raw in (text or "").split(","):
        entry = raw.strip()
        if not entry:
            continue
        group, sep, rest = entry.partition(":")
        workspace, sep2, role = rest.rpartition(":")
        group, workspace, role = group.strip(), workspace.strip(), role.strip()
        if not (sep and sep2 and group and workspace):
            raise SsoConfigError(
                f"CLEARFLOW_OIDC_GROUP_ROLES: {entry!r} is not GROUP:WORKSPACE:ROLE (e.g. 'data-team:Data team:admin')"
            )
        if role not in Role.values:
            raise SsoConfigError(
                f"CLEARFLOW_OIDC_GROUP_ROLES: {entry!r} names the role {role!r}; use viewer, editor or admin"
            )
        entries.append(GroupRole(group, workspace, Role(role)))
    return entries


def group_roles() -> list[GroupRole]:
    return parse_group_roles(settings.CLEARFLOW_OIDC_GROUP_ROLES)


def enabled() -> bool:
    return bool(settings.CLEARFLOW_OIDC_ISSUER and settings.OIDC_RP_CLIENT_ID)


def issuer() -> str:
    return str(settings.CLEARFLOW_OIDC_ISSUER).rstrip("/")


def audience() -> str:
    """The `aud` an access token must carry to be taken by the API: the configured one, else the client id."""
    return str(settings.CLEARFLOW_OIDC_AUDIENCE or settings.OIDC_RP_CLIENT_ID)


_discovered: dict[str, dict[str, Any]] = {}
_discovered_lock = threading.Lock()

# mozilla-django-oidc's setting -> the discovery document's key.
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",
}


def discovery() -> dict[str, Any]:
    """The issuer's `.well-known/openid-configuration`, fetched once per process."""
    url = f"{issuer()}/.well-known/openid-configuration"
    with _discovered_lock:
        if url not in _discovered:
            try:
                response = requests.get(url, timeout=DISCOVERY_TIMEOUT)
                response.raise_for_status()
                document = response.json()
            except (requests.RequestException, ValueError) as error:
                raise SsoConfigError(
                    f"The single sign-on provider's discovery document {url} could not be read ({error}): "
                    "check CLEARFLOW_OIDC_ISSUER and that the provider is reachable from ClearFlow"
                ) from error
            if document.get("issuer", "").rstrip("/") != issuer():
                raise SsoConfigError(
                    f"{url} names the issuer {document.get('issuer')!r}, not {issuer()!r}: set "
                    "CLEARFLOW_OIDC_ISSUER to the provider's own issuer"
                )
            _discovered[url] = document
        return _discovered[url]


def endpoint(setting: str) -> str | None:
    """An OP endpoint (by mozilla-django-oidc's setting name): a setting when one is made, else the discovered one."""
    configured = getattr(settings, setting, "")
    if configured:
        return str(configured)
    return discovery().get(ENDPOINTS[setting])


def provider_name() -> str:
    return str(settings.CLEARFLOW_OIDC_PROVIDER_NAME or "single sign-on")
