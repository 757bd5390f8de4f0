"""Billing sources' secret keys are encrypted at rest: the column holds a Fernet token, and
the secrets stored before are encrypted here (`audit_app.lib.encryption`)."""

from typing import Any

from django.db import migrations

import audit_app.lib.encryption


def encrypt_stored_secrets(apps: Any, schema_editor: Any) -> None:
    from audit_app.lib.encryption import encrypt

    source_model = apps.get_model("audit_app", "BillingSource")
    for source in source_model.objects.exclude(secret_access_key=""):
        # Read as it was stored (plain); saved through the field, which encrypts.
        source_model.objects.filter(pk=source.pk).update(
            secret_access_key=encrypt(source.secret_access_key)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("audit_app", "0026_long_context_threshold"),
    ]

    operations = [
        migrations.AlterField(
            model_name="billingsource",
            name="secret_access_key",
            field=audit_app.lib.encryption.EncryptedTextField(blank=True, default=""),
        ),
        migrations.RunPython(encrypt_stored_secrets, migrations.RunPython.noop),
    ]
