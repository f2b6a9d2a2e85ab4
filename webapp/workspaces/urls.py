"""The workspace pages."""

from django.urls import path

from webapp.workspaces import views

app_name = "workspaces"

urlpatterns = [
    path("workspaces/new/", views.workspace_new, name="new"),
    path("workspaces/<int:pk>/switch/", views.workspace_switch, name="switch"),
    path("workspaces/<int:pk>/members/", views.workspace_members, name="members"),
    path("invites/<str:secret>/", views.invite_accept_page, name="invite_accept"),
]
