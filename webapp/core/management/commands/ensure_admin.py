"""Make sure the local `admin` superuser exists; its password is generated once and kept under var/.

`make up` runs this and prints the login. In production, create users with `createsuperuser` instead.
"""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from webapp.config.env import env_secret

ADMIN_USERNAME = "admin"


class Command(BaseCommand):
    help = "Create the local admin user if missing (password kept in var/secrets/admin_password)."

    def handle(self, *args: object, **options: object) -> None:
        password = env_secret("ADMIN_PASSWORD", generate=lambda: secrets.token_urlsafe(12))
        users = get_user_model()
        user, created = users.objects.get_or_create(
            username=ADMIN_USERNAME, defaults={"is_staff": True, "is_superuser": True}
        )
        if created:
            user.set_password(password)
            user.save(update_fields=["password"])
            self.stdout.write(f"created user {ADMIN_USERNAME}")
        elif not user.check_password(password):
            # Someone changed it through the admin: their choice stands, we just can't print it.
            self.stdout.write(f"user {ADMIN_USERNAME} exists with a password changed since it was generated")
