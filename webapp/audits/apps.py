from django.apps import AppConfig


class AuditsConfig(AppConfig):
    name = "webapp.audits"
    label = "audits"
    verbose_name = "Duplicate audits"
