"""Encrypt every stored secret again with the first key of FIELD_ENCRYPTION_KEYS: the step of a
key rotation between putting the new key first and dropping the old one."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from audit_app.ingestion.source_changes import secrets_encrypt_again


class Command(BaseCommand):
    help = "Encrypt every stored secret again with the first key of FIELD_ENCRYPTION_KEYS."

    def handle(self, *args: Any, **options: Any) -> None:
        done, failed = secrets_encrypt_again()
        self.stdout.write(f"{done} secret(s) encrypted with the first key.")
        if failed:
            raise CommandError(
                f"{len(failed)} secret(s) could not be decrypted with any key of "
                f"FIELD_ENCRYPTION_KEYS and were left as they are: {', '.join(failed)}."
            )
