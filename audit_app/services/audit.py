"""The audit trail: one function every service calls after a change people must answer for."""

from __future__ import annotations

from typing import Any

from audit_app.models import AuditEvent


def audit_record(
    *, actor: Any, action: str, obj: Any, summary: str, details: dict[str, Any] | None = None
) -> AuditEvent:
    """Record that `actor` (a user, or None for the command line) did `action` to `obj`."""
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        actor=user,
        actor_name=user.get_username() if user else "command line",
        action=action,
        object_type=type(obj).__name__,
        object_id=str(getattr(obj, "pk", "")),
        summary=summary[:500],
        details=details or {},
    )
