from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "webapp.alerts"
    label = "alerts"
    verbose_name = "Alerts"
