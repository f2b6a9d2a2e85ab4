"""Each user's API tokens move into the user's workspace (webapp.workspaces.migration_ops)."""

import django.db.models.deletion
from django.db import migrations, models

from webapp.workspaces.migration_ops import move_into_owners_workspaces


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0002_token_read_only"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="api_tokens",
                to="workspaces.workspace",
            ),
        ),
        migrations.RunPython(move_into_owners_workspaces("api", "apitoken", "user"), migrations.RunPython.noop),
        migrations.AlterField(
            model_name="apitoken",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="api_tokens", to="workspaces.workspace"
            ),
        ),
    ]
