"""The audit trail: one function every service calls after a change people must answer for."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Model

from audit_app.access.permissions import Actor
from audit_app.models import AuditEvent


def audit_record(
    *,
    actor: Actor,
    action: str,
    obj: Model | None,
    summary: str,
    details: dict[str, Any] | None = None,
    actor_name: str = "",
) -> AuditEvent:
    """Record that `actor` (a user, or None for the command line) did `action` to `obj`.

    ``obj`` is None for an attempt that reached no object (a refused sign-in), and
    ``actor_name`` names an actor who is no user (the client address of that attempt)."""
    user = actor if isinstance(actor, User) else None  # the anonymous user is nobody
    return AuditEvent.objects.create(
        actor=user,
        actor_name=user.get_username() if user else actor_name or "command line",
        action=action,
        object_type=type(obj).__name__ if obj is not None else "",
        object_id=str(getattr(obj, "pk", "")) if obj is not None else "",
        summary=summary[:500],
        details=details or {},
    )


def audit_update(
    *,
    actor: Actor,
    action: str,
    obj: Model,
    what: str,
    before: dict[str, Any],
    after: dict[str, Any],
) -> AuditEvent:
    """Record a change to `obj` ("changed <what>: <fields>"), with the fields that differ
    between ``before`` and ``after`` (each a field-to-value dict of the same keys)."""
    changed = sorted(name for name in after if after[name] != before[name])
    return audit_record(
        actor=actor,
        action=action,
        obj=obj,
        summary=f"changed {what}: {', '.join(changed) or 'nothing'}",
        details={
            "change": "updated",
            "before": {name: before[name] for name in changed},
            "after": {name: after[name] for name in changed},
        },
    )
