"""Each owner's alert channels move into the owner's workspace;
names are unique per workspace (webapp.workspaces.migration_ops)."""

import django.db.models.deletion
from django.db import migrations, models

from webapp.workspaces.migration_ops import move_into_owners_workspaces


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0003_behind_rule_for_existing_pipelines"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="alertchannel",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="alert_channels",
                to="workspaces.workspace",
            ),
        ),
        migrations.RunPython(move_into_owners_workspaces("alerts", "alertchannel", "owner"), migrations.RunPython.noop),
        migrations.AlterField(
            model_name="alertchannel",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="alert_channels", to="workspaces.workspace"
            ),
        ),
        migrations.RemoveConstraint(model_name="alertchannel", name="alert_channel_unique_name_per_owner"),
        migrations.AddConstraint(
            model_name="alertchannel",
            constraint=models.UniqueConstraint(
                fields=["workspace", "name"], name="alert_channel_unique_name_per_workspace"
            ),
        ),
    ]
