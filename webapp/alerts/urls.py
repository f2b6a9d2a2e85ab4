"""The alert pages (server-rendered, htmx)."""

from django.urls import path

from webapp.alerts import views

app_name = "alerts"

urlpatterns = [
    path("alerts/", views.incident_history, name="history"),
    path("alerts/channels/", views.channel_list, name="channels"),
    path("alerts/channels/<int:pk>/", views.channel_edit, name="channel_edit"),
    path("alerts/channels/<int:pk>/delete/", views.channel_delete, name="channel_delete"),
    path("pipelines/<int:pk>/alerts/", views.pipeline_rules, name="pipeline_rules"),
    path("pipelines/<int:pk>/alerts/summary/", views.pipeline_alert_summary, name="pipeline_summary"),
]
