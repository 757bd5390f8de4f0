"""Template context shared by every page: the navigation and the user's roles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from audit_app.access.permissions import user_roles


@dataclass(frozen=True, kw_only=True)
class NavItem:
    label: str
    url: str
    active: bool


# (label, url name) in the order the navigation shows them.
NAVIGATION: tuple[tuple[str, str], ...] = (
    ("Overview", "overview"),
    ("Workloads", "workloads"),
    ("Uploads", "uploads"),
    ("Sources", "sources"),
    ("Recommendations", "recommendations"),
    ("Anomalies", "anomalies"),
    ("Alerts", "alerts"),
    ("Benchmarks", "benchmarks"),
    ("Reconciliation", "reconciliation"),
    ("Budgets", "budgets"),
    ("Statements", "statements"),
    ("API docs", "api-docs"),
)


def _is_current(name: str, current: str | None) -> bool:
    # "workloads" is also current on "workload-detail", "uploads" on "upload-new", ...
    return current is not None and (
        current == name or current.startswith(name.removesuffix("s") + "-")
    )


def navigation(request: HttpRequest) -> dict[str, Any]:
    match = getattr(request, "resolver_match", None)
    current = match.url_name if match else None
    items = [
        NavItem(label=label, url=reverse(name), active=_is_current(name, current))
        for label, name in NAVIGATION
    ]
    return {"nav_items": items, "current_roles": sorted(user_roles(request.user))}
