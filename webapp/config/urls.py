from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("webapp.api.urls")),
    path("", include("webapp.health.urls")),
]
