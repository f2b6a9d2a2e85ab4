"""Every pipeline gets the "falling behind" rule, on by default as for new pipelines (its values of RULE_PARAMS)."""

from django.db import migrations, models


def create_behind_rules(apps, schema_editor):
    Pipeline = apps.get_model("pipelines", "Pipeline")
    AlertRule = apps.get_model("alerts", "AlertRule")
    AlertRule.objects.bulk_create(
        [
            AlertRule(pipeline_id=pk, kind="behind", threshold=0, minutes=5, renotify_minutes=60)
            for pk in Pipeline.objects.values_list("pk", flat=True)
        ],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0002_default_rules_for_existing_pipelines"),
        ("pipelines", "0008_run_sizing_and_resize"),
    ]

    operations = [
        migrations.AlterField(
            model_name="alertincident",
            name="kind",
            field=models.CharField(
                choices=[
                    ("duplicates", "Duplicates found by the audit"),
                    ("dead_letter_rate", "Dead-letter rate over a threshold"),
                    ("consumer_lag", "Consumer lag over a threshold"),
                    ("pipeline_failed", "Pipeline failed"),
                    ("no_events", "No events"),
                    ("behind", "Falling behind"),
                ],
                max_length=20,
            ),
        ),
        migrations.AlterField(
            model_name="alertrule",
            name="kind",
            field=models.CharField(
                choices=[
                    ("duplicates", "Duplicates found by the audit"),
                    ("dead_letter_rate", "Dead-letter rate over a threshold"),
                    ("consumer_lag", "Consumer lag over a threshold"),
                    ("pipeline_failed", "Pipeline failed"),
                    ("no_events", "No events"),
                    ("behind", "Falling behind"),
                ],
                max_length=20,
            ),
        ),
        migrations.RunPython(create_behind_rules, migrations.RunPython.noop),
    ]
