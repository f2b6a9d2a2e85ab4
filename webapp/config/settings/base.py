"""Django itself: apps, database, security, static files, REST framework."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from cryptography.fernet import Fernet

from webapp.config.env import REPO_ROOT, env_bool, env_int, env_list, env_secret, env_str, var_dir

BASE_DIR = REPO_ROOT
VAR_DIR = var_dir()

SECRET_KEY = env_secret("DJANGO_SECRET_KEY")
# Key for secrets stored in the database (connection passwords, private keys). Fernet: AES-128-CBC + HMAC.
# Comma-separated to allow rotation: the first key encrypts, all keys decrypt.
FIELD_ENCRYPTION_KEYS = env_list("CLEARFLOW_ENCRYPTION_KEY", []) or [
    env_secret("CLEARFLOW_ENCRYPTION_KEY", generate=lambda: Fernet.generate_key().decode())
]
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "axes",
    "csp",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "webapp.core",
    "webapp.workspaces",
    "webapp.activity",
    "webapp.sso",
    "webapp.connections",
    "webapp.pipelines",
    "webapp.api",
    "webapp.health",
    "webapp.wizard",
    "webapp.audits",
    "webapp.alerts",
]

MIDDLEWARE = [
    # First: it counts every answer, the redirects and refusals of the middleware below included.
    "webapp.monitoring.middleware.RequestCountMiddleware",
    # A view that could not reach PostgreSQL answers 503 in words (the 500 handler does for the middleware below).
    "webapp.core.database_down.DatabaseDownMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it answers locked-out logins.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "webapp.config.urls"
WSGI_APPLICATION = "webapp.config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [REPO_ROOT / "webapp" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webapp.workspaces.current.header",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", "postgres://clearflow@127.0.0.1:5432/clearflow"), conn_max_age=60
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [REPO_ROOT / "frontend"]
STATIC_ROOT = env_str("DJANGO_STATIC_ROOT", str(VAR_DIR / "static"))
# WhiteNoise warns on every request while the directory is missing (before the first collectstatic).
Path(STATIC_ROOT).mkdir(parents=True, exist_ok=True)

SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# HTTPS, CSP, login lockout, tokens, forbidden networks: webapp.config.settings.security.

# The client's address is REMOTE_ADDR, or, behind this many reverse proxies (docker-compose's nginx: 1), the
# address the nearest one appended to X-Forwarded-For (webapp.core.logins.client_address). Login lockouts and
# the API's throttles both read it so.
CLEARFLOW_PROXY_COUNT = env_int("CLEARFLOW_PROXY_COUNT", 0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "webapp.api.tokens.ApiTokenAuthentication",
        # The single sign-on provider's access tokens (Authorization: Bearer), when it is configured.
        "webapp.sso.authentication.OidcBearerAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": "60/min",
        "user": "1200/min",
    },
    # A JSON API: form encodings turn "" and null into "not given", which the schema cannot describe.
    "DEFAULT_PARSER_CLASSES": ["webapp.api.parsers.BoundedJSONParser"],
    # JSON out too: the schema documents JSON answers (the Swagger page is the API's browser), so no operation
    # answers HTML; a client that accepts neither gets a documented 406.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "webapp.api.permissions.TokenMayWrite",
        "webapp.workspaces.permissions.WorkspaceRole",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "webapp.api.exception_handlers.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Throttles read the client's address as the login lockout does (webapp.core.logins): REMOTE_ADDR, or the
    # nearest proxy's X-Forwarded-For entry. Unset, DRF would take the whole header, which a client can forge.
    "NUM_PROXIES": CLEARFLOW_PROXY_COUNT,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ClearFlow API",
    "DESCRIPTION": (
        "Set up and run Kafka -> dedup -> ClickHouse streaming pipelines.\n\n"
        "**Authentication.** Create an API token in the web app on its *API tokens* page (the link beside your "
        "workspace at the top right, /account/tokens/; the token is shown once), then send it as "
        "`Authorization: Token <token>`. On this page, press **Authorize** and enter "
        "`Token <token>` to try the calls; a logged-in browser session works too."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    # Swagger UI's assets come from the drf-spectacular-sidecar package (no CDN reachable).
    # One schema name for the status choices, whether a field is a pipeline's status or a transition's from/to.
    "ENUM_NAME_OVERRIDES": {
        "PipelineStatusEnum": "webapp.pipelines.models.PipelineStatus",
        "AlertChannelKindEnum": "webapp.alerts.models.ChannelKind",
        "AlertRuleKindEnum": "webapp.alerts.models.RuleKind",
        "WorkspaceRoleEnum": "webapp.workspaces.models.Role",
        "FieldRoleEnum": "webapp.pipelines.type_fit_outputs.FIELD_ROLES",
    },
    "SWAGGER_UI_DIST": "SIDECAR",
    # The token entered under Authorize survives a reload of the docs page.
    "SWAGGER_UI_SETTINGS": {"persistAuthorization": True},
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "webapp.api.schema.document_common_errors",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("CLEARFLOW_LOG_LEVEL", "INFO")},
}
