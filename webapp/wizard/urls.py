from django.urls import path

from webapp.pipelines import schema_change_views
from webapp.wizard import (
    connection_views,
    dedup_views,
    fit_views,
    observe_views,
    pipeline_pages,
    table_dedup_views,
    views,
)

app_name = "wizard"

urlpatterns = [
    path("", pipeline_pages.pipeline_list, name="pipeline_list"),
    path("pipelines/<int:pk>/", pipeline_pages.pipeline_detail, name="pipeline_detail"),
    path("pipelines/<int:pk>/spec.json", pipeline_pages.pipeline_spec_download, name="pipeline_spec_download"),
    path("pipelines/<int:pk>/edit/", views.wizard_edit, name="wizard_edit"),
    path("pipelines/<int:pk>/metrics/", observe_views.pipeline_metrics, name="pipeline_metrics"),
    path("pipelines/<int:pk>/dead-letters/", observe_views.dead_letter_list, name="dead_letters"),
    path(
        "pipelines/<int:pk>/dead-letters/download/",
        observe_views.dead_letter_download_view,
        name="dead_letters_download",
    ),
    path("pipelines/<int:pk>/dead-letters/replay/", observe_views.dead_letter_replay, name="dead_letters_replay"),
    path("pipelines/<int:pk>/dead-letters/purge/", observe_views.dead_letter_purge, name="dead_letters_purge"),
    path("pipelines/<int:pk>/run-state/", pipeline_pages.pipeline_run_state, name="pipeline_run_state"),
    path("pipelines/<int:pk>/table-dedup/", table_dedup_views.pipeline_table_dedup, name="pipeline_table_dedup"),
    path(
        "pipelines/<int:pk>/table-dedup/apply/",
        table_dedup_views.pipeline_table_dedup_apply,
        name="pipeline_table_dedup_apply",
    ),
    path(
        "pipelines/<int:pk>/schema-changes/",
        schema_change_views.pipeline_schema_changes,
        name="pipeline_schema_changes",
    ),
    path(
        "pipelines/<int:pk>/schema-changes/add-column/",
        schema_change_views.pipeline_schema_change_add_column,
        name="pipeline_schema_change_add_column",
    ),
    path("pipelines/<int:pk>/<str:action>/", pipeline_pages.pipeline_action, name="pipeline_action"),
    path("pipelines/new/", views.wizard_new, name="wizard_new"),
    path("connections/", connection_views.connection_list, name="connection_list"),
    path("connections/<str:kind>/new/", connection_views.connection_new, name="connection_new"),
    path("connections/<str:kind>/<int:pk>/", connection_views.connection_edit, name="connection_edit"),
    path("connections/<str:kind>/<int:pk>/test/", connection_views.connection_test, name="connection_test"),
    path("connections/<str:kind>/<int:pk>/delete/", connection_views.connection_delete, name="connection_delete"),
    path("wizard/<int:draft_id>/discard/", views.wizard_discard, name="discard"),
    path("wizard/<int:draft_id>/spec.json", views.draft_spec_download, name="draft_spec_download"),
    path("wizard/<int:draft_id>/review/spec/", views.review_spec, name="review_spec"),
    path("wizard/<int:draft_id>/kafka/test/", views.kafka_test, name="kafka_test"),
    path("wizard/<int:draft_id>/topics/list/", views.topic_list, name="topic_list"),
    path("wizard/<int:draft_id>/sample/fetch/", views.sample_fetch, name="sample_fetch"),
    path("wizard/<int:draft_id>/dedup/analysis/", dedup_views.dedup_analysis, name="dedup_analysis"),
    path("wizard/<int:draft_id>/dedup/presence/", fit_views.dedup_presence, name="dedup_presence"),
    path("wizard/<int:draft_id>/transform/check/", views.transform_check, name="transform_check"),
    path("wizard/<int:draft_id>/clickhouse/test/", views.clickhouse_test, name="clickhouse_test"),
    path("wizard/<int:draft_id>/clickhouse/tables/", views.clickhouse_tables, name="clickhouse_tables"),
    path("wizard/<int:draft_id>/clickhouse/columns/", views.clickhouse_columns, name="clickhouse_columns"),
    path(
        "wizard/<int:draft_id>/clickhouse/table-dedup/", table_dedup_views.draft_table_dedup, name="draft_table_dedup"
    ),
    path(
        "wizard/<int:draft_id>/clickhouse/table-dedup/apply/",
        table_dedup_views.draft_table_dedup_apply,
        name="draft_table_dedup_apply",
    ),
    path("wizard/<int:draft_id>/<slug:step>/keep/", views.wizard_keep_input, name="keep_input"),
    path("wizard/<int:draft_id>/<slug:step>/", views.wizard_step, name="step"),
]
