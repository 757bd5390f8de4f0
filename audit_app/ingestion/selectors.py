"""Reads about one upload: what deleting it would remove (the delete confirmation page), and
the benchmark gates that keep it from being deleted."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Sum

from audit_app.models import DailyRollup, Upload, Workload


@dataclass(frozen=True, kw_only=True)
class WorkloadContribution:
    """One workload's requests in an upload; `workload_id` links its page when it has one."""

    name: str
    requests: int
    workload_id: int | None


@dataclass(frozen=True, kw_only=True)
class GateUse:
    """A benchmark run of an upload compared in a gate, as its baseline or its candidate."""

    gate_id: int
    run_id: int
    role: str  # "baseline" or "candidate"


@dataclass(frozen=True, kw_only=True)
class UploadContribution:
    """What an upload added: the workloads a token log touched, or a bill's billed total."""

    rows_accepted: int
    workloads: tuple[WorkloadContribution, ...]
    billed: tuple[tuple[str, Decimal], ...]  # (currency, billed cost), by currency


def upload_contribution(*, upload: Upload) -> UploadContribution:
    """Read from the upload's daily rollups (token logs) or its stored totals (billing)."""
    workloads: tuple[WorkloadContribution, ...] = ()
    if upload.kind == Upload.Kind.TOKEN_LOG:
        rows = list(
            DailyRollup.objects.filter(upload=upload)
            .values("workload")
            .annotate(requests=Sum("requests"))
            .order_by("workload")
        )
        ids = dict(
            Workload.objects.filter(name__in=[row["workload"] for row in rows]).values_list(
                "name", "pk"
            )
        )
        workloads = tuple(
            WorkloadContribution(
                name=row["workload"],
                requests=row["requests"] or 0,
                workload_id=ids.get(row["workload"]),
            )
            for row in rows
        )
    billed_totals = (upload.billing_totals or {}).get("billed", {})
    billed = tuple(
        (currency, Decimal(amount)) for currency, amount in sorted(billed_totals.items())
    )
    return UploadContribution(
        rows_accepted=upload.rows_accepted, workloads=workloads, billed=billed
    )


def upload_gate_uses(*, upload: Upload) -> tuple[GateUse, ...]:
    """The gates comparing a benchmark run of this upload, by gate then run.

    Found through the reverse relations (upload -> its runs, or the runs its points belong
    to -> the gates naming them), as
    `audit_app` never imports `benchmarks_app`.
    """
    # A run's first file is its `upload`; every file (the first too) backs some of its points.
    uses = {
        GateUse(gate_id=gate_id, run_id=run_id, role=role)
        for role in ("baseline", "candidate")
        for relation in ("benchmark_runs", "benchmark_points__run")
        for run_id, gate_id in Upload.objects.filter(
            pk=upload.pk, **{f"{relation}__gates_as_{role}__isnull": False}
        ).values_list(f"{relation}__pk", f"{relation}__gates_as_{role}__pk")
    }
    return tuple(sorted(uses, key=lambda use: (use.gate_id, use.run_id, use.role)))
