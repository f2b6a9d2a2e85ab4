"""API tokens: django-rest-knox's hashed token with a name and the time of last use.

Only the token's SHA-512 digest and its first characters (`token_key`, knox's lookup index) are stored; the
token itself is shown once, when created. The primary key is a plain id, so URLs never carry the digest.
A read-only token reads everything its user may read and changes nothing (`webapp.api.permissions.TokenMayWrite`).
"""

from __future__ import annotations

from django.db import models
from knox.models import AbstractAuthToken
from knox.settings import CONSTANTS


class ApiToken(AbstractAuthToken):
    id = models.BigAutoField(primary_key=True)
    digest = models.CharField(max_length=CONSTANTS.DIGEST_LENGTH, unique=True)
    name = models.CharField(max_length=100)
    last_used = models.DateTimeField(null=True, blank=True)
    read_only = models.BooleanField(default=False, help_text="Reads only: every change is refused (403).")
    # The one workspace the token acts in, with its user's role there (webapp.workspaces.policy).
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="api_tokens")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.user})"
