"""Each owner's connections move into the owner's workspace;
names are unique per workspace (webapp.workspaces.migration_ops)."""

import django.db.models.deletion
from django.db import migrations, models

from webapp.workspaces.migration_ops import move_into_owners_workspaces


class Migration(migrations.Migration):
    dependencies = [
        ("connections", "0005_host_checks_end_at_the_end"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="kafkaconnection",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="kafka_connections",
                to="workspaces.workspace",
            ),
        ),
        migrations.RunPython(
            move_into_owners_workspaces("connections", "kafkaconnection", "owner"), migrations.RunPython.noop
        ),
        migrations.AlterField(
            model_name="kafkaconnection",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="kafka_connections", to="workspaces.workspace"
            ),
        ),
        migrations.RemoveConstraint(model_name="kafkaconnection", name="kafka_connection_unique_name_per_owner"),
        migrations.AddConstraint(
            model_name="kafkaconnection",
            constraint=models.UniqueConstraint(
                fields=["workspace", "name"], name="kafka_connection_unique_name_per_workspace"
            ),
        ),
        migrations.AddField(
            model_name="clickhouseconnection",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="clickhouse_connections",
                to="workspaces.workspace",
            ),
        ),
        migrations.RunPython(
            move_into_owners_workspaces("connections", "clickhouseconnection", "owner"), migrations.RunPython.noop
        ),
        migrations.AlterField(
            model_name="clickhouseconnection",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="clickhouse_connections",
                to="workspaces.workspace",
            ),
        ),
        migrations.RemoveConstraint(
            model_name="clickhouseconnection", name="clickhouse_connection_unique_name_per_owner"
        ),
        migrations.AddConstraint(
            model_name="clickhouseconnection",
            constraint=models.UniqueConstraint(
                fields=["workspace", "name"], name="clickhouse_connection_unique_name_per_workspace"
            ),
        ),
        migrations.AddField(
            model_name="schemaregistryconnection",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="schema_registry_connections",
                to="workspaces.workspace",
            ),
        ),
        migrations.RunPython(
            move_into_owners_workspaces("connections", "schemaregistryconnection", "owner"), migrations.RunPython.noop
        ),
        migrations.AlterField(
            model_name="schemaregistryconnection",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="schema_registry_connections",
                to="workspaces.workspace",
            ),
        ),
        migrations.RemoveConstraint(
            model_name="schemaregistryconnection", name="schema_registry_connection_unique_name_per_owner"
        ),
        migrations.AddConstraint(
            model_name="schemaregistryconnection",
            constraint=models.UniqueConstraint(
                fields=["workspace", "name"], name="schema_registry_connection_unique_name_per_workspace"
            ),
        ),
    ]
