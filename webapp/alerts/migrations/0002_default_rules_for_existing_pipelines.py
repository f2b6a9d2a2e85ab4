"""Pipelines created before alerts existed get the default rules too (the values of RULE_PARAMS then)."""

from django.db import migrations

DEFAULTS = [
    # kind, threshold, minutes, renotify_minutes
    ("pipeline_failed", 0, 0, 60),
    ("duplicates", 0, 0, 60),
    ("dead_letter_rate", 1.0, 15, 60),
    ("consumer_lag", 100_000, 10, 60),
    ("no_events", 0, 30, 60),
]


def create_defaults(apps, schema_editor):
    Pipeline = apps.get_model("pipelines", "Pipeline")
    AlertRule = apps.get_model("alerts", "AlertRule")
    rules = [
        AlertRule(pipeline_id=pk, kind=kind, threshold=threshold, minutes=minutes, renotify_minutes=renotify)
        for pk in Pipeline.objects.values_list("pk", flat=True)
        for kind, threshold, minutes, renotify in DEFAULTS
    ]
    AlertRule.objects.bulk_create(rules, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [("alerts", "0001_initial")]

    operations = [migrations.RunPython(create_defaults, migrations.RunPython.noop)]
