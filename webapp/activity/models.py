"""The activity log: one entry per change, written by the service that makes it, in the same transaction."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ActivityEntry(models.Model):
    # Null for a sign-in, which happens before any workspace is chosen: those are the user's own.
    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, null=True, blank=True, related_name="activity"
    )
    at = models.DateTimeField(default=timezone.now, db_index=True)
    # Who: the user (kept by name too, for users since removed and for failed sign-ins of unknown names) and the
    # API token they acted through, if any.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="activity"
    )
    actor_name = models.CharField(max_length=150, blank=True, default="")
    token = models.ForeignKey("api.ApiToken", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    token_name = models.CharField(max_length=100, blank=True, default="")
    action = models.CharField(max_length=50, db_index=True)  # e.g. "pipeline.deploy", "member.add"
    object_type = models.CharField(max_length=50, blank=True, default="")  # e.g. "pipeline", "kafka_connection"
    object_id = models.BigIntegerField(null=True, blank=True)
    object_name = models.CharField(max_length=255, blank=True, default="")
    # The object's fields before and after (only those that changed, for an edit); secrets masked.
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "activity entries"
        indexes = [models.Index(fields=["workspace", "-at"], name="activity_by_workspace")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or '-'} {self.action} {self.object_name}"
