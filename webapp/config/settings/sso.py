"""Single sign-on with OpenID Connect (webapp.sso, docs/teams.md): on when CLEARFLOW_OIDC_ISSUER and
CLEARFLOW_OIDC_CLIENT_ID are set, beside local passwords. The provider's endpoints come from its discovery
document (`<issuer>/.well-known/openid-configuration`)."""

from __future__ import annotations

from webapp.config.env import env_str

CLEARFLOW_OIDC_ISSUER = env_str("CLEARFLOW_OIDC_ISSUER", "").rstrip("/")
OIDC_RP_CLIENT_ID = env_str("CLEARFLOW_OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = env_str("CLEARFLOW_OIDC_CLIENT_SECRET", "")
# The button on the login page says "Sign in with <this>".
CLEARFLOW_OIDC_PROVIDER_NAME = env_str("CLEARFLOW_OIDC_PROVIDER_NAME", "single sign-on")
# GROUP:WORKSPACE:ROLE, comma-separated: "data-team:Data team:admin, analysts:Data team:viewer" (webapp.sso.config).
CLEARFLOW_OIDC_GROUP_ROLES = env_str("CLEARFLOW_OIDC_GROUP_ROLES", "")
CLEARFLOW_OIDC_GROUPS_CLAIM = env_str("CLEARFLOW_OIDC_GROUPS_CLAIM", "groups")
# The `aud` an access token must carry for the API to take it; the client id when unset.
CLEARFLOW_OIDC_AUDIENCE = env_str("CLEARFLOW_OIDC_AUDIENCE", "")
OIDC_RP_SCOPES = env_str("CLEARFLOW_OIDC_SCOPES", "openid email profile")

# mozilla-django-oidc. The provider's endpoints (OIDC_OP_*) are not settings: they are discovered
# (webapp.sso.config.endpoint).
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10
OIDC_CREATE_USER = True
