"""Demo accounts for the embedded default: one user per role, plus an administrator."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from audit_app.permissions import Role


@dataclass(frozen=True, kw_only=True)
class DemoAccount:
    username: str
    password: str
    role: str


# Fixed passwords so a second `make run` prints the same credentials it printed the first time.
DEMO_ACCOUNTS: tuple[DemoAccount, ...] = (
    DemoAccount(username="finops", password="finops-demo", role=Role.FINOPS),
    DemoAccount(username="engineer", password="engineer-demo", role=Role.ENGINEER),
    DemoAccount(username="manager", password="manager-demo", role=Role.MANAGER),
    DemoAccount(username="admin", password="admin-demo", role="admin"),
)


@transaction.atomic
def demo_users_ensure() -> list[DemoAccount]:
    """Create (or reset) the demo accounts; returns them with their passwords."""
    user_model = get_user_model()
    for account in DEMO_ACCOUNTS:
        user, _ = user_model.objects.get_or_create(username=account.username)
        user.set_password(account.password)
        user.is_active = True
        if account.role == "admin":
            user.is_staff = True
            user.is_superuser = True
        else:
            user.groups.add(Group.objects.get_or_create(name=account.role)[0])
        user.save()
    return list(DEMO_ACCOUNTS)
