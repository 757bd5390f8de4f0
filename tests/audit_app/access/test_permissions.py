"""The one permission helper, used by pages and API alike."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, Group
from django.urls import resolve
from rest_framework.views import APIView

from audit_app.access.permissions import (
    ALL_ROLES,
    EVERY_ROLE_READS,
    Role,
    RoleRequiredMixin,
    has_role,
    method_roles,
    user_roles,
)
from tests.support.urls import project_urls


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


class _Table:
    """A view handling GET and POST, whose table names GET and POST only."""

    roles_by_method = {"GET": ALL_ROLES, "POST": frozenset({Role.MANAGER})}

    def get(self) -> None: ...

    def post(self) -> None: ...

    def patch(self) -> None: ...


def test_method_roles_reads_the_table() -> None:
    view = _Table()
    assert method_roles(view, "get") == ALL_ROLES
    assert method_roles(view, "HEAD") == ALL_ROLES  # GET's entry
    assert method_roles(view, "POST") == {Role.MANAGER}
    # Not handled: every role, and the view answers 405.
    assert method_roles(view, "DELETE") == ALL_ROLES
    # OPTIONS: whoever may send any method named.
    assert method_roles(view, "OPTIONS") == ALL_ROLES
    only_managers = type("Only", (), {"roles_by_method": {"*": frozenset({Role.MANAGER})}})()
    assert (
        method_roles(only_managers, "GET") == method_roles(only_managers, "PUT") == {Role.MANAGER}
    )
    # Handled but not named: nobody, so a forgotten entry refuses.
    assert method_roles(view, "PATCH") == frozenset()
    # No table: every role reads.
    assert method_roles(object(), "GET") == ALL_ROLES


def _handlers(view_class: type) -> set[str]:
    return {
        m.upper()
        for m in ("get", "post", "put", "patch", "delete")
        if callable(getattr(view_class, m, None))
    }


def test_every_view_names_each_method_it_handles() -> None:
    """Every page and API view's table names each method it handles besides GET (a view
    without a table is read by every role): none is left to the fail-closed refusal."""
    checked = 0
    for url in project_urls():
        if url.is_admin:
            continue
        callback = resolve(url.path).func
        view_class = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
        if view_class is None or not (
            issubclass(view_class, RoleRequiredMixin) or issubclass(view_class, APIView)
        ):
            continue
        table = getattr(view_class, "roles_by_method", EVERY_ROLE_READS)
        assert not hasattr(view_class, "allowed_roles"), url.name
        named = set(table) if "*" not in table else _handlers(view_class)
        missing = _handlers(view_class) - {"GET"} - named
        if "GET" in _handlers(view_class) and "GET" not in named:
            missing.add("GET")
        assert not missing, f"{url.name}: {view_class.__name__} does not name {missing}"
        checked += 1
    assert checked > 40
