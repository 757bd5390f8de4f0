"""Secrets encrypted at rest: the column holds a Fernet token, never the text; any key of
FIELD_ENCRYPTION_KEYS decrypts and the first encrypts; `encrypt_secrets` re-encrypts after a
rotation; the migration encrypts what was stored in plain text."""

from __future__ import annotations

import importlib
from io import StringIO
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db import connection

from audit_app.lib.encryption import PREFIX, decrypt, derived_key, encrypt
from audit_app.models import BillingSource

pytestmark = pytest.mark.django_db
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _stored(source_id: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT secret_access_key FROM audit_app_billingsource WHERE id = %s", [source_id]
        )
        return str(cursor.fetchone()[0])


def _source(name: str = "cur") -> BillingSource:
    return BillingSource.objects.create(
        name=name,
        kind="s3",
        location="acme-billing",
        access_key_id="AKIA",
        secret_access_key=SECRET,
    )


def test_the_column_holds_a_token_and_the_model_reads_the_secret(settings: Any) -> None:
    key = Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [key]
    source = _source()
    stored = _stored(source.pk)
    assert SECRET not in stored and stored.startswith(PREFIX)
    assert Fernet(key.encode()).decrypt(stored[len(PREFIX) :].encode()).decode() == SECRET
    assert BillingSource.objects.get().secret_access_key == SECRET


def test_without_keys_one_is_derived_from_the_secret_key(settings: Any) -> None:
    settings.FIELD_ENCRYPTION_KEYS = []
    source = _source()
    token = _stored(source.pk)[len(PREFIX) :]
    assert Fernet(derived_key(settings.SECRET_KEY).encode()).decrypt(token.encode()) == (
        SECRET.encode()
    )


def test_a_rotated_key_list_decrypts_and_encrypt_secrets_moves_to_the_new_key(
    settings: Any,
) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old]
    source = _source()
    settings.FIELD_ENCRYPTION_KEYS = [new, old]
    assert BillingSource.objects.get().secret_access_key == SECRET
    out = StringIO()
    call_command("encrypt_secrets", stdout=out)
    assert out.getvalue() == "1 secret(s) encrypted with the first key.\n"
    token = _stored(source.pk)[len(PREFIX) :]
    assert Fernet(new.encode()).decrypt(token.encode()).decode() == SECRET
    settings.FIELD_ENCRYPTION_KEYS = [new]  # the old key dropped
    assert BillingSource.objects.get().secret_access_key == SECRET


def test_a_secret_no_key_decrypts_is_kept_and_reported(settings: Any) -> None:
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    source = _source()
    stored = _stored(source.pk)
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    assert BillingSource.objects.get().secret_access_key == stored
    with pytest.raises(CommandError, match="1 secret\\(s\\) could not be decrypted .*: cur\\."):
        call_command("encrypt_secrets", stdout=StringIO())
    assert _stored(source.pk) == stored  # nothing lost


def test_a_bad_key_is_named_by_its_position(settings: Any) -> None:
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode(), "not-a-key"]
    with pytest.raises(ImproperlyConfigured, match="FIELD_ENCRYPTION_KEYS: key 2 is not"):
        encrypt("x")


def test_plain_values_read_as_they_are_and_the_migration_encrypts_them() -> None:
    source = _source()
    BillingSource.objects.filter(pk=source.pk).update(secret_access_key=SECRET)
    with connection.cursor() as cursor:  # as a row written before the column was encrypted
        cursor.execute(
            "UPDATE audit_app_billingsource SET secret_access_key = %s WHERE id = %s",
            [SECRET, source.pk],
        )
    assert BillingSource.objects.get().secret_access_key == SECRET
    migration = importlib.import_module("audit_app.migrations.0028_encrypt_source_secrets")
    migration.encrypt_stored_secrets(apps, None)
    stored = _stored(source.pk)
    assert stored.startswith(PREFIX) and decrypt(stored) == SECRET
    assert encrypt("") == "" and decrypt("") == ""


def test_the_migration_masks_urls_kept_on_pulled_uploads() -> None:
    from audit_app.models import Upload

    url = "https://ann:pw@billing.example.com/f.csv?token=abc"
    source = BillingSource.objects.create(name="url", kind="http", location=url)
    pulled = Upload.objects.create(kind="billing", billing_source=source, source_object=url)
    migration = importlib.import_module("audit_app.migrations.0028_encrypt_source_secrets")
    migration.mask_pulled_urls(apps, None)
    pulled.refresh_from_db()
    assert pulled.source_object == "https://***:***@billing.example.com/f.csv?token=***"
