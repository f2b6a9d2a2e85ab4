"""API routes under /api/v1/audits/ (and the pipeline's latest audit under /api/v1/pipelines/)."""

from django.urls import path

from webapp.audits import apis

urlpatterns = [
    path("", apis.AuditedTableListCreateApi.as_view(), name="audits"),
    path("<int:pk>/", apis.AuditedTableDetailApi.as_view(), name="audit"),
    path("<int:pk>/results/", apis.AuditResultListApi.as_view(), name="audit-results"),
]

pipeline_urlpatterns = [
    path("<int:pk>/audit/", apis.PipelineAuditApi.as_view(), name="pipeline-audit"),
]
