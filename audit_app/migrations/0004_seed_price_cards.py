"""Seed price cards from the shipped catalog (api rows with token prices)."""

from __future__ import annotations

from django.db import migrations


def seed(apps, schema_editor):
    from audit_app.costs.catalog import price_card_defaults, price_card_specs

    price_card = apps.get_model("audit_app", "PriceCard")
    for spec in price_card_specs():
        price_card.objects.get_or_create(
            provider=spec.provider,
            model=spec.model,
            valid_from=spec.valid_from,
            defaults=price_card_defaults(spec),
        )


class Migration(migrations.Migration):
    dependencies = [("audit_app", "0003_ingestion")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
