"""Load demo data for the embedded default: demo accounts (only with DEBUG on)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from audit_app.services.demo import demo_users_ensure


class Command(BaseCommand):
    help = "Create one demo user per role and print their credentials (DEBUG only)."

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG:
            raise CommandError(
                "seed_demo creates accounts with published passwords, so it runs only with "
                "DJANGO_DEBUG=true."
            )
        accounts = demo_users_ensure()
        self.stdout.write("Demo accounts (DEBUG only; passwords are public):")
        for account in accounts:
            self.stdout.write(
                f"  {account.role:<9} username: {account.username:<9} password: {account.password}"
            )
