"""Issue an API token for a user and print it (shown once; only its hash is stored)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit_app.access.tokens import api_token_issue


class Command(BaseCommand):
    help = "Print a new API token for USERNAME. Use it as 'Authorization: Token <token>'."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label to tell tokens apart.")

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(username=options["username"])
        except user_model.DoesNotExist:
            raise CommandError(f"no user named {options['username']!r}") from None
        if not user.is_active:
            raise CommandError(f"user {user.username!r} is inactive")
        issued = api_token_issue(user=user, name=options["name"])
        self.stdout.write(issued.key)
