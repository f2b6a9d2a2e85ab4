from django.apps import AppConfig


class WizardConfig(AppConfig):
    name = "webapp.wizard"
    label = "wizard"
    verbose_name = "Pipeline wizard"
