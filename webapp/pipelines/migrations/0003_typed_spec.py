"""`PipelineVersion.spec` becomes a `PipelineSpecField` (the same JSON column, read as a `PipelineSpec`), and the
stored specs are written in today's words (`upgrade_spec`: the renames within spec version 1), so every
existing row reads as before."""

from django.db import migrations

import webapp.pipelines.spec_field


def upgrade_stored_specs(apps, schema_editor):
    from webapp.pipelines.spec_field import upgrade_spec

    PipelineVersion = apps.get_model("pipelines", "PipelineVersion")
    for pk, spec in PipelineVersion.objects.values_list("pk", "spec").iterator():
        if isinstance(spec, dict) and (upgraded := upgrade_spec(spec)) != spec:
            PipelineVersion.objects.filter(pk=pk).update(spec=upgraded)


class Migration(migrations.Migration):
    dependencies = [
        ("pipelines", "0002_runs_and_transitions"),
    ]

    operations = [
        migrations.AlterField(
            model_name="pipelineversion",
            name="spec",
            field=webapp.pipelines.spec_field.PipelineSpecField(),
        ),
        migrations.RunPython(upgrade_stored_specs, migrations.RunPython.noop),
    ]
