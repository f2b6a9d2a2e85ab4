"""Who a user is at the OpenID Connect provider: a user signed in by single sign-on is found again by the
provider's (issuer, subject) pair, never by a user name or email a local account could also have."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class OidcIdentity(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    # The groups of the last sign-in or token: memberships are synced again only when they change.
    groups = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_once_per_subject")]

    def __str__(self) -> str:
        return f"{self.user} at {self.issuer}"
