"""A workspace is what a team shares: its connections, pipelines, alert channels, audited tables and API tokens
belong to it, and its members see them with a role (`webapp.workspaces.policy` says what each role may do)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    # In rising order: each role may do everything the one before it may (policy.ROLE_RANK).
    VIEWER = "viewer", "Viewer"
    EDITOR = "editor", "Editor"
    ADMIN = "admin", "Admin"


class Workspace(models.Model):
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)
    # Viewers browse the dead letters without their payloads (which may hold personal data).
    hide_dead_letter_payloads = models.BooleanField(
        default=False, help_text="Viewers see each dead letter's error and position, not its payload."
    )
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="workspaces")

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace_id", "id"]
        constraints = [models.UniqueConstraint(fields=["workspace", "user"], name="membership_once_per_workspace")]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"


class Invite(models.Model):
    """A one-time link that lets a new local user sign up into a workspace with a role. Only a digest of the
    link's secret is kept: the link is shown once, when the invite is made."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invites")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    email = models.EmailField(blank=True, help_text="Whom it is for (shown to admins; the link works for anyone).")
    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="invites_made"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="invites_used"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invite to {self.workspace} as {self.role}" + (f" for {self.email}" if self.email else "")
