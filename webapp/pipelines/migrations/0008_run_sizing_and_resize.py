from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("pipelines", "0007_run_start"),
    ]

    operations = [
        migrations.AddField(
            model_name="pipelinerun",
            name="sizing",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="pipelinerun",
            name="resize",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name="pipelinerun",
            name="outcome",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "Active"),
                    ("stopped", "Stopped"),
                    ("failed", "Failed"),
                    ("replaced", "Replaced by a new version"),
                    ("resized", "Re-sized"),
                    ("stack_stop", "Stopped with the stack"),
                ],
                default="",
                max_length=10,
            ),
        ),
    ]
