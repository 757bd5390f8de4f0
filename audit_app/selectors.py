"""Selectors: every non-trivial read the audit app makes. They return frozen dataclasses."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta

from django.db.models import Count
from django.db.models.functions import TruncDate
from django.utils import timezone

from audit_app.models import Upload


@dataclass(frozen=True, kw_only=True)
class UploadsPerDay:
    days: list[date]
    counts_by_kind: dict[str, list[int]]  # kind label -> one count per day, aligned with days
    total: int


def uploads_per_day(*, days: int = 30, today: date | None = None) -> UploadsPerDay:
    """Uploads created on each of the last ``days`` days (UTC), per kind, zeros included."""
    last_day = today or timezone.now().date()
    first_day = last_day - timedelta(days=days - 1)
    day_list = [first_day + timedelta(days=i) for i in range(days)]
    rows = (
        Upload.objects.filter(created_at__date__gte=first_day, created_at__date__lte=last_day)
        .annotate(day=TruncDate("created_at"))
        .values("day", "kind")
        .annotate(n=Count("id"))
    )
    by_kind: dict[str, dict[date, int]] = defaultdict(dict)
    for row in rows:
        by_kind[row["kind"]][row["day"]] = row["n"]
    labels = dict(Upload.Kind.choices)
    counts = {
        labels[kind]: [by_kind[kind].get(day, 0) for day in day_list]
        for kind in Upload.Kind.values
        if kind in by_kind
    }
    if not counts:
        # An empty database still draws a chart: a flat line of zeros over the window.
        counts = {"Uploads": [0] * days}
    total = sum(sum(values) for values in counts.values())
    return UploadsPerDay(days=day_list, counts_by_kind=counts, total=total)


def upload_list(*, limit: int = 200) -> list[Upload]:
    return list(Upload.objects.select_related("uploaded_by")[:limit])
