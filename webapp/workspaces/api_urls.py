"""The workspaces' routes under /api/v1/ (included by webapp.api.urls)."""

from django.urls import path

from webapp.workspaces import apis

urlpatterns = [
    path("workspaces/", apis.WorkspaceListCreateApi.as_view(), name="workspaces"),
    path("workspaces/<int:pk>/", apis.WorkspaceDetailApi.as_view(), name="workspace"),
    path("workspaces/<int:pk>/members/", apis.MemberListCreateApi.as_view(), name="workspace-members"),
    path("workspaces/<int:pk>/invites/", apis.InviteListCreateApi.as_view(), name="workspace-invites"),
    path("workspaces/<int:pk>/members/<int:member>/", apis.MemberDetailApi.as_view(), name="workspace-member"),
]
