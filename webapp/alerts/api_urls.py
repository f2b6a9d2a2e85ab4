"""The alerts' REST API, included under /api/v1/."""

from django.urls import path

from webapp.alerts import apis

urlpatterns = [
    path("alerts/channels/", apis.ChannelListCreateApi.as_view(), name="alert-channels"),
    path("alerts/channels/<int:pk>/", apis.ChannelDetailApi.as_view(), name="alert-channel"),
    path("alerts/incidents/", apis.IncidentListApi.as_view(), name="alert-incidents"),
    path("alerts/incidents/<int:pk>/", apis.IncidentDetailApi.as_view(), name="alert-incident"),
    path("pipelines/<int:pk>/alert-rules/", apis.RuleListApi.as_view(), name="alert-rules"),
    path("pipelines/<int:pk>/alert-rules/<slug:kind>/", apis.RuleDetailApi.as_view(), name="alert-rule"),
]
