"""Every URL pattern and every API operation, requested anonymously, is refused, except the open ones.

The URL list comes from Django's resolver and the operation list from the OpenAPI schema, so a new view is
covered the moment it is routed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from rest_framework.test import APIClient

# Open on purpose: health, the login/logout pages and single sign-on's two steps (webapp.sso.views), the API
# schema and its docs pages, Django's static files, /favicon.ico (a redirect to the static icon, which browsers ask
# for before anyone logs in) and invite links (webapp.workspaces.views.invite_accept_page: the link is the key).
OPEN_MODULES = (
    "webapp.health.",
    "drf_spectacular.",
    "webapp.api.schema.SchemaApi",
    "django.contrib.auth.views",
    "django.views.static",
    "webapp.sso.views",
    "webapp.workspaces.views.invite_accept_page",
)
OPEN_URLS = {"/admin/login/", "/admin/logout/", "/favicon.ico"}
METHODS = ("get", "post", "put", "patch", "delete")


def walk(patterns, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern


def concrete_url(route: str) -> str:
    """A URL matching `route` (path() converters and the simple regexes Django's admin uses)."""
    url = route.replace("^", "").replace("$", "").replace("\\Z", "")

    def group(match: re.Match) -> str:
        body = match.group(1)
        if re.fullmatch(r"[\w|]+", body):
            return body.split("|")[0]
        return "1"

    url = re.sub(r"\(\?P<\w+>((?:[^()]|\([^()]*\))*)\)", group, url)
    url = re.sub(r"<int:\w+>", "1", url)
    url = re.sub(r"<uuid:\w+>", "00000000-0000-0000-0000-000000000001", url)
    url = re.sub(r"<(?:\w+:)?\w+>", "x", url)
    return "/" + url


def module_of(pattern: URLPattern) -> str:
    callback = pattern.callback
    view = getattr(callback, "view_class", None) or getattr(callback, "cls", None) or callback
    return f"{view.__module__}.{getattr(view, '__qualname__', '')}"


def is_open(url: str, pattern: URLPattern) -> bool:
    return url in OPEN_URLS or module_of(pattern).startswith(OPEN_MODULES)


def refused(response, url: str) -> bool:
    if response.status_code in (401, 403):
        return True
    if response.status_code == 302:
        location = response["Location"]
        return location.startswith((settings.LOGIN_URL, "/admin/login/"))
    return False


def operation_url(path: str, item: dict) -> str:
    """The schema's path with its parameters filled in: 1 for a number (an id), "x" for text."""
    numbers = {
        parameter["name"]
        for operation in item.values()
        if isinstance(operation, dict)
        for parameter in operation.get("parameters", [])
        if parameter.get("in") == "path" and parameter.get("schema", {}).get("type") == "integer"
    }
    return re.sub(r"\{(\w+)\}", lambda m: "1" if m.group(1) in numbers or m.group(1) == "id" else "x", path)


URLS = sorted({(concrete_url(route), pattern) for route, pattern in walk(get_resolver().url_patterns)}, key=str)


@pytest.mark.fast
def test_every_route_is_built_into_a_url_that_reaches_it():
    for url, pattern in URLS:
        assert resolve(url).func == pattern.callback, url
    assert any(url.startswith("/api/v1/pipelines/") for url, _ in URLS)


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "pattern"), URLS, ids=[url for url, _ in URLS])
def test_url_pattern_refuses_anonymous(url, pattern, settings):
    settings.CLEARFLOW_METRICS_TOKEN = "switched-on"  # /metrics answers 404 while it is off
    client = APIClient()
    if is_open(url, pattern):
        pytest.skip("open on purpose")
    responses = {method: getattr(client, method)(url) for method in ("get", "post")}
    allowed = {m: r for m, r in responses.items() if r.status_code != 405}
    assert allowed, f"{url}: neither GET nor POST is routed"
    for method, response in allowed.items():
        assert refused(response, url), f"{method.upper()} {url} answered {response.status_code} to an anonymous user"


@pytest.mark.django_db
def test_every_api_operation_refuses_anonymous():
    client = APIClient()
    schema = client.get("/api/v1/schema/?format=json")
    assert schema.status_code == 200
    operations = 0
    for path, item in schema.json()["paths"].items():
        url = operation_url(path, item)
        for method in METHODS:
            if method not in item:
                continue
            operations += 1
            response = getattr(client, method)(url, {}, format="json")
            assert response.status_code == 401, f"{method.upper()} {url}: {response.status_code}"
            assert response.json()["code"] == "not_authenticated"
    assert operations >= 25


@pytest.mark.django_db
def test_open_pages_are_open():
    client = APIClient()
    assert client.get("/api/v1/schema/?format=json").status_code == 200
    docs = client.get("/api/v1/docs/")
    assert docs.status_code == 200
    assert b"swagger-ui" in docs.content
    assert client.get("/api/v1/redoc/").status_code == 200
    assert client.get(settings.LOGIN_URL).status_code == 200
