from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("pipelines", "0006_run_cause"),
    ]

    operations = [
        migrations.AddField(
            model_name="pipelinerun",
            name="start",
            field=models.TextField(
                blank=True,
                default="",
                help_text="how the job started: in a standby job, or cold (and why not in a standby)",
            ),
        ),
    ]
