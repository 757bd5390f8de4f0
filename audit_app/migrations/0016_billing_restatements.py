"""Restated billing exports: each charge knows its billing period and account, and which newer
upload superseded it; amortized-cost lines are marked.

Charges stored before this migration did not keep the export's own billing period or account,
so they get what an export without those columns gets: the UTC calendar month of the charge's
start and its sub-account. Then supersession is worked out once over the billing uploads
already landed, in the order they landed (`finished_at`, then id), as if each had landed now.
"""

from datetime import UTC, datetime

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import F
from django.db.models.functions import TruncMonth


def _next_month(start: datetime) -> datetime:
    return datetime(start.year + start.month // 12, start.month % 12 + 1, 1, tzinfo=UTC)


def backfill(apps, schema_editor):
    charge = apps.get_model("audit_app", "BillingCharge")
    upload = apps.get_model("audit_app", "Upload")
    key = apps.get_model("audit_app", "BillingPeriodKey")
    charge.objects.update(billing_account=F("account_id"))
    months = set(
        charge.objects.annotate(month=TruncMonth("period_start", tzinfo=UTC))
        .values_list("month", flat=True)
        .distinct()
    )
    for month in sorted(months):
        start = datetime(month.year, month.month, 1, tzinfo=UTC)
        end = _next_month(start)
        charge.objects.filter(period_start__gte=start, period_start__lt=end).update(
            billing_period_start=start, billing_period_end=end
        )
    landed: list[int] = []
    uploads = (
        upload.objects.filter(kind="billing", status="succeeded")
        .order_by(F("finished_at").asc(nulls_first=True), "id")
        .values_list("id", flat=True)
    )
    for upload_id in uploads:
        keys = (
            charge.objects.filter(upload_id=upload_id)
            .values_list("provider", "billing_account", "billing_period_start")
            .distinct()
        )
        for provider, account, period_start in keys:
            key.objects.get_or_create(
                provider=provider,
                billing_account=account,
                billing_period_start=period_start,
                amortized=False,
            )
            charge.objects.filter(
                upload_id__in=landed,
                provider=provider,
                billing_account=account,
                billing_period_start=period_start,
                superseded_by__isnull=True,
            ).update(superseded_by_id=upload_id)
        landed.append(upload_id)
    if schema_editor.connection.vendor == "postgresql":
        # PostgreSQL refuses to alter a table with pending (deferred) foreign-key checks in the
        # same transaction: run the checks of the updates above now, then defer again.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        schema_editor.execute("SET CONSTRAINTS ALL DEFERRED")


class Migration(migrations.Migration):
    dependencies = [
        ("audit_app", "0015_normalize_rollup_providers"),
    ]

    operations = [
        migrations.CreateModel(
            name="BillingPeriodKey",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("provider", models.CharField(max_length=32)),
                ("billing_account", models.CharField(blank=True, max_length=500)),
                ("billing_period_start", models.DateTimeField()),
                ("amortized", models.BooleanField(default=False)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("provider", "billing_account", "billing_period_start", "amortized"),
                        name="unique_billing_period_key",
                    )
                ],
            },
        ),
        migrations.AddField(
            model_name="billingcharge",
            name="amortized",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="billingcharge",
            name="billing_account",
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.AddField(
            model_name="billingcharge",
            name="billing_period_start",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name="billingcharge",
            name="billing_period_end",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name="billingcharge",
            name="superseded_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="superseded_charges",
                to="audit_app.upload",
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="billingcharge",
            name="billing_period_start",
            field=models.DateTimeField(),
        ),
        migrations.AlterField(
            model_name="billingcharge",
            name="billing_period_end",
            field=models.DateTimeField(),
        ),
        migrations.AddIndex(
            model_name="billingcharge",
            index=models.Index(
                fields=["provider", "billing_account", "billing_period_start"],
                name="charge_billing_period",
            ),
        ),
    ]
