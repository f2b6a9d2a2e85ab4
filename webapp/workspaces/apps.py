from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "webapp.workspaces"
    label = "workspaces"
    verbose_name = "Workspaces and members"
