"""The wizard: its entry points (a new pipeline, an edit), its nine steps and their htmx partials."""

from django.urls import path

from webapp.wizard import exactly_once_views, fit_views, join_views, key_advice_views, sample_views, views

app_name = "wizard"

urlpatterns = [
    path("pipelines/new/", views.wizard_new, name="wizard_new"),
    path("pipelines/<int:pk>/edit/", views.wizard_edit, name="wizard_edit"),
    path("wizard/<int:draft_id>/discard/", views.wizard_discard, name="discard"),
    path("wizard/<int:draft_id>/spec.json", views.draft_spec_download, name="draft_spec_download"),
    path("wizard/<int:draft_id>/review/spec/", views.review_spec, name="review_spec"),
    path("wizard/<int:draft_id>/kafka/test/", views.kafka_test, name="kafka_test"),
    path("wizard/<int:draft_id>/topics/list/", views.topic_list, name="topic_list"),
    path("wizard/<int:draft_id>/sample/fetch/", sample_views.sample_fetch, name="sample_fetch"),
    path(
        "wizard/<int:draft_id>/sample/fetch/<uuid:request_id>/",
        sample_views.sample_fetch_result,
        name="sample_fetch_result",
    ),
    path("wizard/<int:draft_id>/dedup/analysis/", key_advice_views.key_advice, name="key_advice"),
    path(
        "wizard/<int:draft_id>/dedup/analysis/<uuid:request_id>/",
        key_advice_views.key_advice_result,
        name="key_advice_result",
    ),
    path("wizard/<int:draft_id>/dedup/presence/", fit_views.dedup_presence, name="dedup_presence"),
    path("wizard/<int:draft_id>/join/sample/", join_views.join_sample_fetch, name="join_sample_fetch"),
    path(
        "wizard/<int:draft_id>/join/sample/<str:request_id>/",
        join_views.join_sample_fetch_result,
        name="join_sample_fetch_result",
    ),
    path("wizard/<int:draft_id>/join/preview/", join_views.join_preview, name="join_preview"),
    path("wizard/<int:draft_id>/transform/check/", views.transform_check, name="transform_check"),
    path("wizard/<int:draft_id>/clickhouse/test/", views.clickhouse_test, name="clickhouse_test"),
    path("wizard/<int:draft_id>/clickhouse/tables/", views.clickhouse_tables, name="clickhouse_tables"),
    path("wizard/<int:draft_id>/clickhouse/columns/", views.clickhouse_columns, name="clickhouse_columns"),
    path("wizard/<int:draft_id>/clickhouse/table-dedup/", exactly_once_views.exactly_once_check, name="exactly_once"),
    path(
        "wizard/<int:draft_id>/clickhouse/table-dedup/apply/",
        exactly_once_views.exactly_once_apply,
        name="exactly_once_apply",
    ),
    path("wizard/<int:draft_id>/<slug:step>/keep/", views.wizard_keep_input, name="keep_input"),
    path("wizard/<int:draft_id>/<slug:step>/", views.wizard_step, name="step"),
]
