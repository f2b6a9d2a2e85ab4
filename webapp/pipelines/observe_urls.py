"""API routes for watching a pipeline (metrics over time, dead letters), under /api/v1/pipelines/."""

from django.urls import path

from webapp.pipelines import observe_apis

urlpatterns = [
    path("<int:pk>/metrics/", observe_apis.PipelineMetricsApi.as_view(), name="pipeline-metrics"),
    path("<int:pk>/dead-letters/", observe_apis.DeadLetterListApi.as_view(), name="pipeline-dead-letters"),
    path(
        "<int:pk>/dead-letters/download/",
        observe_apis.DeadLetterDownloadApi.as_view(),
        name="pipeline-dead-letters-download",
    ),
    path(
        "<int:pk>/dead-letters/replay/", observe_apis.DeadLetterReplayApi.as_view(), name="pipeline-dead-letters-replay"
    ),
    path("<int:pk>/dead-letters/purge/", observe_apis.DeadLetterPurgeApi.as_view(), name="pipeline-dead-letters-purge"),
]
