from django.apps import AppConfig


class PipelinesConfig(AppConfig):
    name = "webapp.pipelines"
    label = "pipelines"
    verbose_name = "Pipelines"
