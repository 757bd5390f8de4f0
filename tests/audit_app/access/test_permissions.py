"""The one permission helper, used by pages and API alike."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, Group

from audit_app.access.permissions import Role, has_role, user_roles


@pytest.mark.django_db
def test_role_groups_come_from_the_data_migration() -> None:
    names = set(Group.objects.values_list("name", flat=True))
    assert {"finops", "engineer", "manager"} <= names


@pytest.mark.django_db
def test_user_roles(
    finops_user: Any, manager_user: Any, no_role_user: Any, admin_user: Any
) -> None:
    assert user_roles(finops_user) == {"finops"}
    assert user_roles(manager_user) == {"manager"}
    assert user_roles(no_role_user) == frozenset()
    assert user_roles(admin_user) == {"finops", "engineer", "manager"}
    assert user_roles(AnonymousUser()) == frozenset()


@pytest.mark.django_db
def test_has_role(finops_user: Any, engineer_user: Any, no_role_user: Any) -> None:
    assert has_role(finops_user, [Role.FINOPS, Role.MANAGER])
    assert not has_role(engineer_user, [Role.FINOPS, Role.MANAGER])
    assert not has_role(no_role_user)
    assert has_role(engineer_user)


@pytest.mark.django_db
def test_inactive_user_has_no_role(finops_user: Any) -> None:
    finops_user.is_active = False
    assert user_roles(finops_user) == frozenset()
