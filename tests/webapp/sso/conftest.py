"""A real Keycloak for the single sign-on tests (localstack.keycloak), started once per session by the first test
that asks for it, and ClearFlow's settings pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from localstack.keycloak import WEB_CLIENT, Keycloak, start_keycloak

BRIEF_CLIENT = "clearflow-brief"  # client credentials, tokens that live one second (the expired-token test)
GROUP_ROLES = "data-team:Data team:admin, analysts:Data team:viewer, analysts:Reports:editor"


@pytest.fixture(scope="session")
def keycloak(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keycloak]:
    brief = {
        "clientId": BRIEF_CLIENT,
        "enabled": True,
        "publicClient": False,
        "secret": "brief-client-secret",
        "standardFlowEnabled": False,
        "serviceAccountsEnabled": True,
        "attributes": {"access.token.lifespan": "1"},
        "protocolMappers": [
            {
                "name": "audience",
                "protocol": "openid-connect",
                "protocolMapper": "oidc-audience-mapper",
                "config": {"included.client.audience": WEB_CLIENT, "access.token.claim": "true"},
            }
        ],
    }
    provider = start_keycloak(tmp_path_factory.mktemp("keycloak"), extra_clients=[brief])
    yield provider
    provider.stop()


@pytest.fixture
def sso(keycloak: Keycloak, settings) -> Keycloak:
    """ClearFlow configured for the session's Keycloak, with GROUP_ROLES as its group mapping."""
    settings.CLEARFLOW_OIDC_ISSUER = keycloak.issuer
    settings.OIDC_RP_CLIENT_ID = keycloak.web_client.client_id
    settings.OIDC_RP_CLIENT_SECRET = keycloak.web_client.client_secret
    settings.CLEARFLOW_OIDC_PROVIDER_NAME = "Keycloak"
    settings.CLEARFLOW_OIDC_GROUP_ROLES = GROUP_ROLES
    return keycloak
