"""The pipeline pages (server-rendered, htmx partials): the list (home), a pipeline's page and its live parts.

Editing a pipeline is the wizard's (`webapp.wizard.urls`: `pipelines/new/`, `pipelines/<pk>/edit/`).
"""

from django.urls import path

from webapp.pipelines import observe_views, schema_change_views, views

app_name = "pipelines"

urlpatterns = [
    path("", views.pipeline_list, name="list"),
    path("pipelines/<int:pk>/", views.pipeline_detail, name="detail"),
    path("pipelines/<int:pk>/spec.json", views.pipeline_spec_download, name="spec_download"),
    path("pipelines/<int:pk>/run-state/", views.pipeline_run_state, name="run_state"),
    path("pipelines/<int:pk>/table-dedup/", views.pipeline_exactly_once, name="exactly_once"),
    path("pipelines/<int:pk>/table-dedup/apply/", views.pipeline_exactly_once_apply, name="exactly_once_apply"),
    path("pipelines/<int:pk>/metrics/", observe_views.pipeline_metrics, name="metrics"),
    path("pipelines/<int:pk>/dead-letters/", observe_views.dead_letter_list, name="dead_letters"),
    path(
        "pipelines/<int:pk>/dead-letters/download/",
        observe_views.dead_letter_download_view,
        name="dead_letters_download",
    ),
    path("pipelines/<int:pk>/dead-letters/payload/", observe_views.dead_letter_payload, name="dead_letter_payload"),
    path(
        "pipelines/<int:pk>/dead-letters/replay/preview/",
        observe_views.dead_letter_replay_preview,
        name="dead_letters_replay_preview",
    ),
    path("pipelines/<int:pk>/dead-letters/replay/", observe_views.dead_letter_replay, name="dead_letters_replay"),
    path("pipelines/<int:pk>/dead-letters/purge/", observe_views.dead_letter_purge, name="dead_letters_purge"),
    path("pipelines/<int:pk>/schema-changes/", schema_change_views.pipeline_schema_changes, name="schema_changes"),
    path(
        "pipelines/<int:pk>/schema-changes/add-column/",
        schema_change_views.pipeline_schema_change_add_column,
        name="schema_change_add_column",
    ),
    # Last: any other word is an action (deploy, stop, resume, delete, reset-checkpoint; others are a 404). The
    # root URLconf includes the other apps' `pipelines/<pk>/...` pages (edit, alerts, proof) before these.
    path("pipelines/<int:pk>/<str:action>/", views.pipeline_action, name="action"),
]
