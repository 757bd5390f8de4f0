"""Rollups store each model's one id (`audit_app.costs.model_names.canonical_pair`).

Ingest gives every rollup key its canonical (provider, model): a routing prefix naming the row's
own provider is dropped (LiteLLM's ``openai/gpt-4o`` is OpenAI's ``gpt-4o``) and a row with no
provider takes the one its prefix names. Rows written before keep the routed spelling, so spend
by model would list one model twice; this rewrites them, and the model budgets that name a
routed spelling. For each distinct stored (provider, model) whose canonical pair differs, its
rows are updated in batches of primary keys (a plain ``UPDATE ... WHERE id IN (...)``, the same
on SQLite and PostgreSQL). Two rows of one upload may then share a key: every reader sums rows
by key, and a live stream's next landing merges them (`ingestion.live.merge`). The data version
goes up, so cached results of the old names are not read again and derived results refresh.
Backwards it does nothing: the routed spellings are not kept, and the canonical ids read the
same before this migration.
"""

import uuid

from django.db import migrations
from django.db.models import F

BATCH = 5000
MODELS = ("HourlyRollup", "DailyRollup")


def canonical_models(apps, schema_editor):
    from audit_app.costs.model_names import canonical_model, canonical_pair

    changed = 0
    for name in MODELS:
        model = apps.get_model("audit_app", name)
        stored = list(model.objects.values_list("provider", "model").distinct().order_by())
        for provider, raw in stored:
            target_provider, target_model = canonical_pair(provider, raw)
            if (target_provider, target_model) == (provider, raw):
                continue
            while True:
                batch = list(
                    model.objects.filter(provider=provider, model=raw)
                    .order_by("pk")
                    .values_list("pk", flat=True)[:BATCH]
                )
                if not batch:
                    break
                changed += model.objects.filter(pk__in=batch).update(
                    provider=target_provider, model=target_model
                )
    budget = apps.get_model("audit_app", "Budget")
    rollups = [apps.get_model("audit_app", name) for name in MODELS]
    for row in budget.objects.filter(scope_kind="model"):
        target = canonical_model(row.scope_value)
        kept = any(m.objects.filter(model=row.scope_value).exists() for m in rollups)
        if target != row.scope_value and not kept:
            budget.objects.filter(pk=row.pk).update(scope_value=target)
            changed += 1
    if changed:
        version = apps.get_model("audit_app", "DataVersion")
        token = uuid.uuid4().hex  # cache keys use the token (audit_app.lib.results_cache)
        if not version.objects.filter(pk=1).update(version=F("version") + 1, token=token):
            version.objects.create(pk=1, version=1, token=token)


class Migration(migrations.Migration):
    dependencies = [
        ("audit_app", "0033_possible_restatements"),
    ]

    operations = [
        migrations.RunPython(canonical_models, migrations.RunPython.noop),
    ]
