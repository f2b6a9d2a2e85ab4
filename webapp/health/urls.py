from django.urls import path

from webapp.health import views

urlpatterns = [
    path("api/v1/health", views.health_api, name="health-api"),
    path("health", views.health_page, name="health"),
]
