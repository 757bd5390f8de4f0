"""Seed the hardware catalog and the throughput assumptions from the shipped CSV files."""

from __future__ import annotations

from django.db import migrations


def seed(apps, schema_editor):
    from audit_app.costs.catalog import hardware_rows, throughput_rows

    target = apps.get_model("audit_app", "HardwareTarget")
    for row in hardware_rows():
        key = {k: row[k] for k in ("kind", "provider", "name")}
        target.objects.get_or_create(**key, defaults=row)
    assumption = apps.get_model("audit_app", "ThroughputAssumption")
    for row in throughput_rows():
        key = {k: row[k] for k in ("instance", "model_class")}
        assumption.objects.get_or_create(**key, defaults=row)


class Migration(migrations.Migration):
    dependencies = [("audit_app", "0007_recommendations")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
