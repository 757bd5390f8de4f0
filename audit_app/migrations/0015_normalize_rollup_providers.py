"""Rollups store each provider's one name (`audit_app.costs.providers.normalize_provider`).

Ingest now normalises the provider of every rollup key (``bedrock`` and ``aws.bedrock`` are both
``aws-bedrock``). Rows written before keep their raw spelling, so pages would list one provider
twice; this rewrites them. For each distinct stored provider whose normal name differs, its rows
are updated in batches of primary keys (a plain ``UPDATE ... WHERE id IN (...)``, the same on
SQLite and PostgreSQL). The data version goes up, so no cached result of the old names is read
again. Backwards it does nothing: the raw spellings are not kept, and the normal names read the
same before this migration.
"""

import uuid

from django.db import migrations
from django.db.models import F

BATCH = 5000
MODELS = ("HourlyRollup", "DailyRollup")


def normalise_providers(apps, schema_editor):
    from audit_app.costs.providers import normalize_provider

    changed = 0
    for name in MODELS:
        model = apps.get_model("audit_app", name)
        stored = list(model.objects.values_list("provider", flat=True).distinct().order_by())
        for raw in stored:
            target = normalize_provider(raw)
            if target == raw:
                continue
            while True:
                batch = list(
                    model.objects.filter(provider=raw)
                    .order_by("pk")
                    .values_list("pk", flat=True)[:BATCH]
                )
                if not batch:
                    break
                changed += model.objects.filter(pk__in=batch).update(provider=target)
    if changed:
        version = apps.get_model("audit_app", "DataVersion")
        token = uuid.uuid4().hex  # cache keys use the token (audit_app.lib.results_cache)
        if not version.objects.filter(pk=1).update(version=F("version") + 1, token=token):
            version.objects.create(pk=1, version=1, token=token)


class Migration(migrations.Migration):
    dependencies = [
        ("audit_app", "0014_upload_sha256_unique_unless_failed"),
    ]

    operations = [
        migrations.RunPython(normalise_providers, migrations.RunPython.noop),
    ]
