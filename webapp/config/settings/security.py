"""Security: HTTPS, Content-Security-Policy, login lockout, API throttles and tokens, forbidden networks.

Served over HTTPS (`DJANGO_HTTPS=true`, docker-compose's production setting), the app redirects plain HTTP,
sends HSTS and marks its cookies secure. Locally (`make up`, plain HTTP on 127.0.0.1) all three stay off.
"""

from __future__ import annotations

from datetime import timedelta

from csp.constants import NONE, SELF

from webapp.config.env import env_bool, env_int, env_list, env_str

HTTPS = env_bool("DJANGO_HTTPS", False)
SECURE_SSL_REDIRECT = HTTPS
# Behind nginx (docker-compose), which terminates TLS and sets X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SECURE_HSTS_SECONDS = 31_536_000 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# A form refused by the CSRF check gets ClearFlow's page in words (an API path its JSON error).
CSRF_FAILURE_VIEW = "webapp.api.fallbacks.csrf_failure"
# The health endpoint must answer plain HTTP probes inside the container network, and `/metrics` a Prometheus
# that scrapes the web service there (docs/monitoring.md).
SECURE_REDIRECT_EXEMPT = [r"^health$", r"^api/v1/health$", r"^metrics$"]

# django-csp. Inline `style="..."` attributes are used by the templates (and uPlot sets styles from script,
# which CSP does not restrict); no inline script anywhere: htmx's indicator <style> is switched off in base.html.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "worker-src": [SELF, "blob:"],  # ReDoc
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# Cache: throttles, the login lockout's cool-off and the health answer. Redis when set (several gunicorn
# workers share counts), else the process's memory.
_CACHE_URL = env_str("CLEARFLOW_CACHE_URL", "")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _CACHE_URL}
        if _CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "clearflow"}
    )
}

# django-axes (webapp.core.logins, docs/configuration.md): a user name from one address is locked out after
# LOGIN_FAILURES_PER_USER failed logins, and an address after LOGIN_FAILURES_PER_ADDRESS failures over all user
# names (password spraying), for AXES_COOLOFF_TIME (UI and admin).
LOGIN_FAILURES_PER_USER = env_int("CLEARFLOW_LOGIN_FAILURES_PER_USER", 5)
LOGIN_FAILURES_PER_ADDRESS = env_int("CLEARFLOW_LOGIN_FAILURES_PER_ADDRESS", 20)
AXES_FAILURE_LIMIT = "webapp.core.logins.failure_limit"
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
# Failures expire after the cool-off, not on a successful login: a reset would clear the address's count too, and
# a sprayer with one account of their own could log in between tries.
AXES_RESET_ON_SUCCESS = False
AXES_SENSITIVE_PARAMETERS: list[str] = []  # the log names the user and address of each failure (never a password)
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The client's address as CLEARFLOW_PROXY_COUNT (settings.base) says: see webapp.core.logins.
AXES_CLIENT_IP_CALLABLE = "webapp.core.logins.client_address"

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # Single sign-on (webapp.sso, settings.sso): signs in only through /oidc/callback/, when configured.
    "webapp.sso.backends.OidcBackend",
]

# API tokens (django-rest-knox): only a SHA-512 digest is stored; the token is shown once, when created.
KNOX_TOKEN_MODEL = "api.ApiToken"  # noqa: S105 - a model name
# knox's own migrations create its default token table even though ours replaces it (an orphan with a foreign key
# to users, which breaks flushing the database): without migrations, a swapped-out model gets no table.
MIGRATION_MODULES = {"knox": None}
REST_KNOX = {
    "TOKEN_TTL": None,  # a user sets an expiry per token, or revokes it
    "AUTH_HEADER_PREFIX": "Token",
    "TOKEN_PREFIX": "cf_",
}

# Connections (tests, browsing, saved connections, jobs, alert webhooks) may not reach these networks, checked
# after name resolution: cloud metadata services and link-local (webapp.connections.network_guard).
CLEARFLOW_FORBIDDEN_NETWORKS = env_list(
    "CLEARFLOW_FORBIDDEN_NETWORKS", ["169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128", "100.100.100.200/32"]
)
# Whether they may reach loopback and private addresses (anything not globally routable). On for the local stack
# and the tests, where everything is on loopback; off in docker-compose.yml, where only the configured Kafka and
# ClickHouse (KAFKA_BOOTSTRAP_SERVERS, CLICKHOUSE_HOST:CLICKHOUSE_PORT) stay reachable on the private network.
CLEARFLOW_ALLOW_PRIVATE_NETWORKS = env_bool("CLEARFLOW_ALLOW_PRIVATE_NETWORKS", True)

# A connection test, a list of topics or tables, a sample, key advice or a live check opens sockets to a host the
# user names: this many such requests a minute per user, all of them together (UI and API; connections.throttle).
# A person going through the wizard at speed makes about 20-30 of them in a minute (sample, topics, tables,
# columns, key advice, live checks), so the bound is above that; a scan of ports through them stays at one a second.
CONNECTION_REQUESTS_PER_MINUTE = 60

# What one user, and one workspace, may hold and run (webapp.pipelines.quotas): a pipeline past a "pipelines" cap
# is refused, and so is a deploy or resume past a "running" one (each running job takes a Spark driver: 0.6 to
# 0.9 GB). 429 in words.
PIPELINES_PER_USER = env_int("CLEARFLOW_PIPELINES_PER_USER", 100)
RUNNING_PIPELINES_PER_USER = env_int("CLEARFLOW_RUNNING_PIPELINES_PER_USER", 10)
PIPELINES_PER_WORKSPACE = env_int("CLEARFLOW_PIPELINES_PER_WORKSPACE", 200)
RUNNING_PIPELINES_PER_WORKSPACE = env_int("CLEARFLOW_RUNNING_PIPELINES_PER_WORKSPACE", 20)

# Key advice and samples read events in the worker, and the page or the API client polls for the answer
# (webapp.connections.heavy_requests): at most this many of each kind at once per user and per workspace (429 in
# words past either); an answer is kept this long after it ends, and a request the worker never ended stops
# counting after the stale bound.
HEAVY_REQUESTS_PER_USER = env_int("CLEARFLOW_HEAVY_REQUESTS_PER_USER", 2)
HEAVY_REQUESTS_PER_WORKSPACE = env_int("CLEARFLOW_HEAVY_REQUESTS_PER_WORKSPACE", 4)
HEAVY_REQUEST_KEEP_SECONDS = 600
HEAVY_REQUEST_STALE_SECONDS = 300

# Bodies: Django refuses a larger request body with RequestDataTooBig (answered in the JSON error shape).
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440  # 2.5 MiB, Django's default, named
# JSON nesting deeper than this is refused before it is parsed (webapp.api.parsers).
MAX_JSON_DEPTH = 64

# Prometheus `/metrics` (docs/monitoring.md): scraped with `Authorization: Bearer <token>`; unset, it is off (404).
CLEARFLOW_METRICS_TOKEN = env_str("CLEARFLOW_METRICS_TOKEN", "")
