"""The Audits pages and the pipeline page's proof partial."""

from django.urls import path

from webapp.audits import views

app_name = "audits"

urlpatterns = [
    path("audits/", views.audit_list, name="audit_list"),
    path("audits/<int:pk>/", views.audit_detail, name="audit_detail"),
    path("audits/<int:pk>/delete/", views.audit_delete, name="audit_delete"),
    path("pipelines/<int:pk>/proof/", views.pipeline_proof, name="pipeline_proof"),
]
