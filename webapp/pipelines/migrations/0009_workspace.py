"""Each owner's pipelines move into the owner's workspace;
names are unique per workspace (webapp.workspaces.migration_ops)."""

import django.db.models.deletion
from django.db import migrations, models

from webapp.workspaces.migration_ops import move_into_owners_workspaces


class Migration(migrations.Migration):
    dependencies = [
        ("pipelines", "0008_run_sizing_and_resize"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="pipeline",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="pipelines",
                to="workspaces.workspace",
            ),
        ),
        migrations.RunPython(move_into_owners_workspaces("pipelines", "pipeline", "owner"), migrations.RunPython.noop),
        migrations.AlterField(
            model_name="pipeline",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="pipelines", to="workspaces.workspace"
            ),
        ),
        migrations.RemoveConstraint(model_name="pipeline", name="pipeline_unique_name_per_owner"),
        migrations.AddConstraint(
            model_name="pipeline",
            constraint=models.UniqueConstraint(fields=["workspace", "name"], name="pipeline_unique_name_per_workspace"),
        ),
    ]
