"""Output shapes shared by several apps' API views."""

from __future__ import annotations

from rest_framework import serializers


class ChangeOutput(serializers.Serializer):
    """One difference of a "diff" operation (`webapp.core.changes.Change`)."""

    path = serializers.CharField(help_text='e.g. "spec.dedup.window", "kafka_connection" (by name), "host".')
    current = serializers.JSONField(allow_null=True, help_text="null: not set now.")
    proposed = serializers.JSONField(allow_null=True, help_text="null: would be removed.")
    secret = serializers.BooleanField(help_text="A secret that would change: both values are null, never shown.")
