"""The activity log's route under /api/v1/ (included by webapp.api.urls)."""

from django.urls import path

from webapp.activity import apis

urlpatterns = [path("activity/", apis.ActivityListApi.as_view(), name="activity")]
