from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "webapp.api"
    label = "api"
    verbose_name = "REST API"

    def ready(self) -> None:
        from webapp.api import schema  # noqa: F401 - registers the OpenAPI authentication extension
