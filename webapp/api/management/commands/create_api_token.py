"""`manage.py create_api_token alice --name "deploy script"`: print a new API token for a user (shown once)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.api.tokens import api_token_create


class Command(BaseCommand):
    help = "Create an API token for a user and print it (only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="command line", help="what uses the token")
        parser.add_argument("--expires-in-days", type=int, default=None)
        parser.add_argument("--read-only", action="store_true", help="the token may read, never change")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            user = get_user_model().objects.get_by_natural_key(options["username"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {options['username']!r}") from None
        _, text = api_token_create(
            user=user,
            name=options["name"],
            expires_in_days=options["expires_in_days"],
            read_only=options["read_only"],
        )
        self.stdout.write(text)
