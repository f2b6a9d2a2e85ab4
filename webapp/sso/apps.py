from django.apps import AppConfig


class SsoConfig(AppConfig):
    name = "webapp.sso"
    label = "sso"
    verbose_name = "Single sign-on"

    def ready(self) -> None:
        from webapp.sso import checks  # noqa: F401 - registers the configuration check
