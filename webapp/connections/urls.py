"""The connections pages (new Kafka and ClickHouse connections are made in the wizard's steps 1 and 7)."""

from django.urls import path

from webapp.connections import views

app_name = "connections"

urlpatterns = [
    path("connections/", views.connection_list, name="list"),
    path("connections/<str:kind>/new/", views.connection_new, name="new"),
    path("connections/<str:kind>/<int:pk>/", views.connection_edit, name="edit"),
    path("connections/<str:kind>/<int:pk>/test/", views.connection_test, name="test"),
    path("connections/<str:kind>/<int:pk>/delete/", views.connection_delete, name="delete"),
    path("connections/<str:kind>/<int:pk>/default/", views.connection_make_default, name="make_default"),
]
