"""Everything under /api/v1/: each app's API routes (`<app>/api_urls.py`), the tokens, the schema and its docs.
Health is served by webapp.health at /api/v1/health."""

from django.urls import include, path
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

from webapp.api import apis
from webapp.api.schema import SchemaApi

app_name = "api"

urlpatterns = [
    path("connections/", include("webapp.connections.api_urls")),
    path("pipelines/", include("webapp.pipelines.api_urls")),
    path("", include("webapp.alerts.api_urls")),
    path("", include("webapp.audits.api_urls")),
    path("", include("webapp.workspaces.api_urls")),
    path("", include("webapp.activity.api_urls")),
    path("tokens/", apis.ApiTokenListCreateApi.as_view(), name="tokens"),
    path("tokens/<int:pk>/", apis.ApiTokenDetailApi.as_view(), name="token"),
    path("me/", apis.MeApi.as_view(), name="me"),
    path("schema/", SchemaApi.as_view(), name="schema"),
    # Under ClearFlow's header (webapp/templates/api/): the way back to the app.
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api:schema", template_name="api/swagger_ui.html"),
        name="docs",
    ),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema", template_name="api/redoc.html"), name="redoc"),
]
