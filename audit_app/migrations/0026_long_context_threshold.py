from django.db import migrations, models

# Rows ingested before this migration counted long-context tokens above 200,000 input tokens.


class Migration(migrations.Migration):
    dependencies = [
        ("audit_app", "0025_price_dataset"),
    ]

    operations = [
        migrations.AddField(
            model_name="dailyrollup",
            name="long_context_threshold_tokens",
            field=models.PositiveIntegerField(default=200000),
        ),
        migrations.AddField(
            model_name="hourlyrollup",
            name="long_context_threshold_tokens",
            field=models.PositiveIntegerField(default=200000),
        ),
    ]
