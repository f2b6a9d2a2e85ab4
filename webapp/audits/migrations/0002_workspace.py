"""Each owner's audited tables move into the owner's workspace;
names are unique per workspace (webapp.workspaces.migration_ops)."""

import django.db.models.deletion
from django.db import migrations, models

from webapp.workspaces.migration_ops import move_into_owners_workspaces


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0001_initial"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditedtable",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="audited_tables",
                to="workspaces.workspace",
            ),
        ),
        migrations.RunPython(move_into_owners_workspaces("audits", "auditedtable", "owner"), migrations.RunPython.noop),
        migrations.AlterField(
            model_name="auditedtable",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="audited_tables", to="workspaces.workspace"
            ),
        ),
        migrations.RemoveConstraint(model_name="auditedtable", name="audited_table_unique_by_hand"),
        migrations.AddConstraint(
            model_name="auditedtable",
            constraint=models.UniqueConstraint(
                fields=["workspace", "connection", "database", "table"],
                condition=models.Q(("pipeline__isnull", True)),
                name="audited_table_unique_by_hand",
            ),
        ),
    ]
