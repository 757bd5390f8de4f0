"""Management commands of the foundation: seed_demo."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import override_settings

from audit_app.access.permissions import user_roles


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_seed_demo_creates_one_user_per_role_and_prints_credentials() -> None:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    text = out.getvalue()
    assert "username: finops    password: finops-demo" in text
    assert "username: manager   password: manager-demo" in text
    # The benchmark sweep pair: two runs of four points and the gate over them.
    assert re.search(r"Demo benchmark run \d+ Demo: Llama 3.3 70B on 8 × H100 .*: 4 points", text)
    assert re.search(
        r"Demo benchmark run \d+ Demo: Llama 3.3 70B on 16 × Trainium2 .*: 4 points", text
    )
    assert re.search(r"Demo gate \d+: pass - Pass: ", text), text
    # One spend anomaly of each cause, on weekdays of the data's last week.
    planted = re.findall(r"Planted for the anomalies page: (\w+): ([\w-]+) on ", text)
    assert planted == [
        ("volume", "support-chat"),
        ("mix", "code-assistant"),
        ("price", "helpdesk-bot"),
    ], text
    user_model = get_user_model()
    assert user_roles(user_model.objects.get(username="finops")) == {"finops"}
    assert user_roles(user_model.objects.get(username="engineer")) == {"engineer"}
    assert user_roles(user_model.objects.get(username="manager")) == {"manager"}
    assert user_model.objects.get(username="admin").is_superuser
    assert user_model.objects.get(username="finops").check_password("finops-demo")
    # Running it again reuses the accounts and loads nothing twice.
    again = StringIO()
    call_command("seed_demo", stdout=again)
    assert again.getvalue().endswith("Demo data already loaded.\n")
    assert (
        user_model.objects.filter(username__in=["finops", "engineer", "manager", "admin"]).count()
        == 4
    )


@pytest.mark.django_db
@override_settings(DEBUG=False)
def test_seed_demo_refuses_without_debug() -> None:
    with pytest.raises(CommandError, match="runs only with DJANGO_DEBUG=true"):
        call_command("seed_demo")
    assert not get_user_model().objects.filter(username="finops").exists()
