"""Billing sources' secret keys are encrypted at rest: the column holds a Fernet token, and
the secrets stored before are encrypted here (`audit_app.lib.encryption`). Uploads pulled from
a URL source keep its URL with the credentials masked, as new ones do."""

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


def mask_pulled_urls(apps: Any, schema_editor: Any) -> None:
    from audit_app.lib.masking import mask_url_credentials

    upload_model = apps.get_model("audit_app", "Upload")
    pulled = upload_model.objects.filter(billing_source__kind="http").exclude(source_object="")
    for upload in pulled.only("pk", "source_object"):
        shown = mask_url_credentials(upload.source_object)
        if shown != upload.source_object:
            upload_model.objects.filter(pk=upload.pk).update(source_object=shown[:1000])


class Migration(migrations.Migration):
    dependencies = [
        ("audit_app", "0027_live_batch_error"),
    ]

    operations = [
        migrations.AlterField(
            model_name="billingsource",
            name="secret_access_key",
            field=audit_app.lib.encryption.EncryptedTextField(blank=True, default=""),
        ),
        migrations.RunPython(encrypt_stored_secrets, migrations.RunPython.noop),
        migrations.RunPython(mask_pulled_urls, migrations.RunPython.noop),
    ]
