from django.apps import AppConfig


class ActivityConfig(AppConfig):
    name = "webapp.activity"
    label = "activity"
    verbose_name = "Activity log"

    def ready(self) -> None:
        from webapp.activity import signins  # noqa: F401 - records sign-ins (Django's and django-axes' signals)
