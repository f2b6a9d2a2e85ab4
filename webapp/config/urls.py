"""The root URLconf: each app's pages (`<app>/urls.py`), the API (`webapp.api.urls`), login and the admin."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from webapp.sso import views as sso_views

urlpatterns = [
    path("admin/", admin.site.urls),
    # Pages without our <link rel="icon"> (the API docs, a JSON answer opened in a tab): browsers ask here.
    path("favicon.ico", RedirectView.as_view(url=f"{settings.STATIC_URL}favicon.svg", permanent=True)),
    path("api/v1/", include("webapp.api.urls")),
    path("", include("webapp.health.urls")),
    path("", include("webapp.monitoring.urls")),
    path("login/", sso_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("webapp.sso.urls")),
    path("", include("webapp.api.page_urls")),
    path("", include("webapp.workspaces.urls")),
    path("", include("webapp.activity.urls")),
    path("", include("webapp.connections.urls")),
    # Before the pipeline pages: their `pipelines/<pk>/<action>/` would take `pipelines/<pk>/edit/` (the wizard's),
    # `pipelines/<pk>/alerts/` and `pipelines/<pk>/proof/`.
    path("", include("webapp.wizard.urls")),
    path("", include("webapp.alerts.urls")),
    path("", include("webapp.audits.urls")),
    path("", include("webapp.pipelines.urls")),
]

handler400 = "webapp.api.fallbacks.bad_request"
handler403 = "webapp.api.fallbacks.permission_denied"
handler404 = "webapp.api.fallbacks.not_found"
handler500 = "webapp.api.fallbacks.server_error"
