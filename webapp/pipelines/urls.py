from django.urls import path

from webapp.pipelines import apis, schema_change_apis, table_dedup_apis

urlpatterns = [
    path("", apis.PipelineListCreateApi.as_view(), name="pipelines"),
    path("validate/", apis.PipelineSpecValidateApi.as_view(), name="pipeline-spec-validate"),
    path("mapping/", apis.PipelineMappingApi.as_view(), name="pipeline-mapping"),
    path("<int:pk>/", apis.PipelineDetailApi.as_view(), name="pipeline"),
    path("<int:pk>/versions/", apis.PipelineVersionListApi.as_view(), name="pipeline-versions"),
    path("<int:pk>/validate/", apis.PipelineValidateApi.as_view(), name="pipeline-validate"),
    path("<int:pk>/table-dedup/", table_dedup_apis.TableDedupEnableApi.as_view(), name="pipeline-table-dedup"),
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
    path("<int:pk>/status/", apis.PipelineStatusApi.as_view(), name="pipeline-status"),
    path("<int:pk>/deploy/", apis.PipelineDeployApi.as_view(), name="pipeline-deploy"),
    path("<int:pk>/stop/", apis.PipelineStopApi.as_view(), name="pipeline-stop"),
    path("<int:pk>/resume/", apis.PipelineResumeApi.as_view(), name="pipeline-resume"),
    path("<int:pk>/runs/", apis.PipelineRunListApi.as_view(), name="pipeline-runs"),
    path("<int:pk>/history/", apis.PipelineHistoryApi.as_view(), name="pipeline-history"),
    path("<int:pk>/log/", apis.PipelineLogApi.as_view(), name="pipeline-log"),
    path("<int:pk>/checkpoint/reset/", apis.PipelineCheckpointResetApi.as_view(), name="pipeline-checkpoint-reset"),
]
