"""Create the three role groups. Names are written out here, not imported, so this migration
keeps working whatever the code later does with roles."""

from __future__ import annotations

from django.db import migrations

ROLE_NAMES = ("finops", "engineer", "manager")


def create_roles(apps, schema_editor):
    group_model = apps.get_model("auth", "Group")
    for name in ROLE_NAMES:
        group_model.objects.get_or_create(name=name)


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLE_NAMES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("audit_app", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(create_roles, remove_roles)]
