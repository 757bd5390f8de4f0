"""The audit trail: one function every service calls after a change people must answer for."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Model

from audit_app.access.permissions import Actor
from audit_app.models import AuditEvent


def audit_record(
    *, actor: Actor, action: str, obj: Model, summary: str, details: dict[str, Any] | None = None
) -> AuditEvent:
    """Record that `actor` (a user, or None for the command line) did `action` to `obj`."""
    user = actor if isinstance(actor, User) else None  # the anonymous user is nobody
    return AuditEvent.objects.create(
        actor=user,
        actor_name=user.get_username() if user else "command line",
        action=action,
        object_type=type(obj).__name__,
        object_id=str(getattr(obj, "pk", "")),
        summary=summary[:500],
        details=details or {},
    )
