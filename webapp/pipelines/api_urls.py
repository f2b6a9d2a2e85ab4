"""The pipelines' REST API, under /api/v1/pipelines/: CRUD, checks, actions, and watching one (metrics, dead
letters, log)."""

from django.urls import path

from webapp.pipelines import (
    apis,
    diff_apis,
    exactly_once_apis,
    mapping_apis,
    observe_apis,
    rollback_apis,
    schema_change_apis,
)

urlpatterns = [
    path("", apis.PipelineListCreateApi.as_view(), name="pipelines"),
    path("validate/", apis.PipelineSpecValidateApi.as_view(), name="pipeline-spec-validate"),
    path(
        "validate/<str:request_id>/",
        apis.PipelineSpecValidateResultApi.as_view(),
        name="pipeline-spec-validate-result",
    ),
    path("mapping/", mapping_apis.PipelineMappingApi.as_view(), name="pipeline-mapping"),
    path("<int:pk>/", apis.PipelineDetailApi.as_view(), name="pipeline"),
    path("<int:pk>/versions/", apis.PipelineVersionListApi.as_view(), name="pipeline-versions"),
    path("<int:pk>/diff/", diff_apis.PipelineDiffApi.as_view(), name="pipeline-diff"),
    path("<int:pk>/validate/", apis.PipelineValidateApi.as_view(), name="pipeline-validate"),
    path(
        "<int:pk>/validate/<str:request_id>/",
        apis.PipelineValidateResultApi.as_view(),
        name="pipeline-validate-result",
    ),
    path("<int:pk>/table-dedup/", exactly_once_apis.TableDedupEnableApi.as_view(), name="pipeline-table-dedup"),
    path("<int:pk>/status/", apis.PipelineStatusApi.as_view(), name="pipeline-status"),
    path("<int:pk>/deploy/", apis.PipelineDeployApi.as_view(), name="pipeline-deploy"),
    path("<int:pk>/rollback/", rollback_apis.PipelineRollbackApi.as_view(), name="pipeline-rollback"),
    path("<int:pk>/stop/", apis.PipelineStopApi.as_view(), name="pipeline-stop"),
    path("<int:pk>/resume/", apis.PipelineResumeApi.as_view(), name="pipeline-resume"),
    path("<int:pk>/runs/", apis.PipelineRunListApi.as_view(), name="pipeline-runs"),
    path("<int:pk>/history/", apis.PipelineHistoryApi.as_view(), name="pipeline-history"),
    path("<int:pk>/log/", apis.PipelineLogApi.as_view(), name="pipeline-log"),
    path("<int:pk>/checkpoint/reset/", apis.PipelineCheckpointResetApi.as_view(), name="pipeline-checkpoint-reset"),
    path("<int:pk>/metrics/", observe_apis.PipelineMetricsApi.as_view(), name="pipeline-metrics"),
    path("<int:pk>/lag/", observe_apis.PipelineLagApi.as_view(), name="pipeline-lag"),
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
    path(
        "<int:pk>/schema-changes/",
        schema_change_apis.PipelineSchemaChangesApi.as_view(),
        name="pipeline-schema-changes",
    ),
    path(
        "<int:pk>/schema-changes/add-column/",
        schema_change_apis.PipelineAddColumnApi.as_view(),
        name="pipeline-schema-changes-add-column",
    ),
]
