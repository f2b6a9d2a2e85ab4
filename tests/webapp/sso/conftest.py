"""ClearFlow's settings pointed at the session's real Keycloak (`keycloak`, tests/webapp/conftest.py) for the
single sign-on tests."""

from __future__ import annotations

import pytest

from localstack.keycloak import Keycloak

GROUP_ROLES = "data-team:Data team:admin, analysts:Data team:viewer, analysts:Reports:editor"


@pytest.fixture
def sso(keycloak: Keycloak, settings) -> Keycloak:
    """ClearFlow configured for the session's Keycloak, with GROUP_ROLES as its group mapping."""
    settings.CLEARFLOW_OIDC_ISSUER = keycloak.issuer
    settings.OIDC_RP_CLIENT_ID = keycloak.web_client.client_id
    settings.OIDC_RP_CLIENT_SECRET = keycloak.web_client.client_secret
    settings.CLEARFLOW_OIDC_PROVIDER_NAME = "Keycloak"
    settings.CLEARFLOW_OIDC_GROUP_ROLES = GROUP_ROLES
    return keycloak
