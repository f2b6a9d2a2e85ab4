"""The audits' REST API, included under /api/v1/: audited tables and their results, and a pipeline's latest audit."""

from django.urls import path

from webapp.audits import apis

urlpatterns = [
    path("audits/", apis.AuditedTableListCreateApi.as_view(), name="audits"),
    path("audits/<int:pk>/", apis.AuditedTableDetailApi.as_view(), name="audit"),
    path("audits/<int:pk>/results/", apis.AuditResultListApi.as_view(), name="audit-results"),
    path("pipelines/<int:pk>/audit/", apis.PipelineAuditApi.as_view(), name="pipeline-audit"),
]
