"""Roles from the identity provider: OIDC_ROLE_MAP read once, and a user's roles set from the
groups claim at every single sign-on, each grant and removal an audit event.

The map is comma-separated ``group:role`` pairs (the last colon separates them, so a group may
hold colons); a role is a `Role` or ``admin``, which is Django's ``is_staff``. A group may map
to several roles, in several pairs. Superuser status is never granted nor removed here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from audit_app.access.audit import audit_record
from audit_app.access.permissions import Role
from audit_app.models import AuditEvent

ADMIN = "admin"
MAPPABLE_ROLES = frozenset({*(role.value for role in Role), ADMIN})


@lru_cache(maxsize=8)
def role_map_parse(text: str) -> dict[str, frozenset[str]]:
    """Each group's roles; ImproperlyConfigured naming the entry that is not ``group:role``
    with a known role."""
    found: dict[str, set[str]] = {}
    for entry in (item.strip() for item in text.split(",")):
        if not entry:
            continue
        group, colon, role = entry.rpartition(":")
        group, role = group.strip(), role.strip().lower()
        if not colon or not group or not role:
            raise ImproperlyConfigured(
                f"OIDC_ROLE_MAP holds {entry!r}, not a group:role pair such as finops-team:finops."
            )
        if role not in MAPPABLE_ROLES:
            raise ImproperlyConfigured(
                f"OIDC_ROLE_MAP maps {group!r} to {role!r}, which is not a role; roles are "
                f"{', '.join(sorted(MAPPABLE_ROLES))}."
            )
        found.setdefault(group, set()).add(role)
    return {group: frozenset(roles) for group, roles in found.items()}


def role_map() -> dict[str, frozenset[str]]:
    return role_map_parse(settings.OIDC_ROLE_MAP)


def claimed_groups(claims: dict[str, Any]) -> list[str]:
    """The groups the roles claim (OIDC_ROLES_CLAIM) holds: a list of names, or one name."""
    value = claims.get(settings.OIDC_ROLES_CLAIM)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(item) for item in value if isinstance(item, str | int)]
    return []


def mapped_roles(groups: list[str]) -> frozenset[str]:
    """The roles (and ``admin``) the mapped groups give."""
    mapping = role_map()
    return frozenset(role for group in groups for role in mapping.get(group, ()))


@transaction.atomic
def roles_sync(*, user: User, groups: list[str]) -> frozenset[str]:
    """Give ``user`` exactly the roles ``groups`` map to (and staff status for ``admin``),
    recording each grant and removal; the roles held afterwards."""
    wanted = mapped_roles(groups)
    held = frozenset(
        user.groups.filter(name__in=[r.value for r in Role]).values_list("name", flat=True)
    )
    if user.is_staff:
        held |= {ADMIN}
    granted, removed = sorted(wanted - held), sorted(held - wanted)
    for name in granted:
        if name == ADMIN:
            user.is_staff = True
        else:
            user.groups.add(Group.objects.get_or_create(name=name)[0])
    for name in removed:
        if name == ADMIN:
            user.is_staff = False
        else:
            user.groups.remove(*Group.objects.filter(name=name))
    if ADMIN in granted or ADMIN in removed:
        user.save(update_fields=["is_staff"])
    user.__dict__.pop("_audit_roles", None)  # the per-request cache of permissions.user_roles
    for action, names, verb in (
        (AuditEvent.Action.SSO_ROLE_GRANTED, granted, "granted"),
        (AuditEvent.Action.SSO_ROLE_REMOVED, removed, "removed"),
    ):
        for name in names:
            audit_record(
                actor=user,
                action=action,
                obj=user,
                summary=f"role {name} {verb} by the identity provider's groups claim",
                details={"role": name, "groups": groups, "claim": settings.OIDC_ROLES_CLAIM},
            )
    return wanted


if settings.OIDC_ISSUER:
    role_map()  # a bad OIDC_ROLE_MAP stops the server at start-up, naming the entry
