from django.urls import path

from webapp.monitoring import views

urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
]
