from typing import Any

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "webapp.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self) -> None:
        from webapp.pipelines.hooks import pipeline_created

        pipeline_created.connect(_default_rules, dispatch_uid="alerts-default-rules")


def _default_rules(sender: Any, *, pipeline: Any, **_: Any) -> None:
    """Every pipeline starts with the default alert rules (docs/alerts.md); the owner edits them on its alerts page."""
    from webapp.alerts.services import alert_rules_create_defaults

    alert_rules_create_defaults(pipeline=pipeline)
