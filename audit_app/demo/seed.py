"""The embedded default's demo: one user per role plus an administrator, a month of logs with
one spend anomaly of each cause planted (`audit_app.demo.anomalies`) and its bill, a benchmark
sweep pair with its gate (`audit_app.demo.benchmarks`) and a few budgets
(`audit_app.demo.budgets`), and the team directory with owner addresses (`audit_app.demo.teams`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pandas as pd
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from audit_app.access.permissions import Role
from audit_app.demo.anomalies import PlantedAnomaly, plant_anomalies
from audit_app.demo.benchmarks import DemoBenchmarks, demo_benchmarks_load
from audit_app.demo.billing import DEFAULT_POOLS, PlantedDiscrepancy, write_focus_export
from audit_app.demo.budgets import demo_budgets_ensure
from audit_app.demo.teams import demo_teams_ensure
from audit_app.demo.traffic import generate_requests
from audit_app.demo.workloads import DEFAULT_WORKLOADS
from audit_app.demo.writers import write_litellm_csv, write_otel_jsonl
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.lib.days import last_complete_day
from audit_app.models import Budget, ServingPool, Upload


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


DEMO_PREFIX = "demo-"


@dataclass(frozen=True, kw_only=True)
class DemoDataResult:
    uploads: list[Upload]
    skipped: bool  # demo data was already loaded
    planted: PlantedDiscrepancy | None = None  # the bill line made to disagree with the logs
    benchmarks: DemoBenchmarks | None = None  # the sweep pair and its gate
    budgets: tuple[Budget, ...] = ()  # the demo budgets this call created
    anomalies: tuple[PlantedAnomaly, ...] = ()  # the spend anomalies planted in the logs


def demo_data_load(
    *,
    days: int = 30,
    workloads: int | None = None,
    scale: float = 0.02,
    seed: int = 7,
    directory: Path,
    today: date | None = None,
) -> DemoDataResult:
    """Write a demo organisation's logs in the real formats and ingest them like uploads.

    API traffic goes into a LiteLLM spend-log CSV; the self-hosted vLLM pools' traffic into an
    OpenTelemetry JSONL file, with one spend anomaly of each cause planted in the month's last
    week (`plant_anomalies`). Then the benchmark sweep pair and its gate
    (`demo_benchmarks_load`), and the budgets sized on that spend (`demo_budgets_ensure`).
    Each part runs once: a later call finds the demo uploads (of logs and bills), the demo
    runs and budgets, and loads only what is not there yet. Derived results follow like any
    other change; `manage.py seed_demo` refreshes them before it returns.
    """
    demo_teams_ensure()
    logs_loaded = (
        Upload.objects.filter(original_name__startswith=DEMO_PREFIX)
        .exclude(kind=Upload.Kind.BENCHMARK)
        .exists()
    )
    if logs_loaded:
        return DemoDataResult(
            uploads=[],
            skipped=True,
            benchmarks=demo_benchmarks_load(directory=directory),
            budgets=tuple(demo_budgets_ensure(today=today)),
        )
    specs = list(DEFAULT_WORKLOADS if workloads is None else DEFAULT_WORKLOADS[:workloads])
    end_day = today or last_complete_day() + timedelta(days=1)  # the first day not complete
    start = datetime.combine(end_day - timedelta(days=days), time.min, tzinfo=UTC)
    frame = generate_requests(start=start, days=days, workloads=specs, scale=scale, seed=seed)
    frame, anomalies = plant_anomalies(
        frame, start=start, days=days, workloads=specs, scale=scale, seed=seed
    )
    directory.mkdir(parents=True, exist_ok=True)
    self_hosted = frame["pool"] != ""
    files: list[tuple[Path, Callable[[pd.DataFrame, Path], None], pd.DataFrame]] = [
        (
            directory / f"{DEMO_PREFIX}litellm-spend-logs.csv",
            write_litellm_csv,
            frame[~self_hosted],
        ),
        (directory / f"{DEMO_PREFIX}vllm-otel-spans.jsonl", write_otel_jsonl, frame[self_hosted]),
    ]
    uploads = []
    for path, write, part in files:
        if part.empty:
            continue
        write(part.reset_index(drop=True), path)
        uploads.append(_ingest_file(path, kind=Upload.Kind.TOKEN_LOG))
    # The bill for the same month: API token charges (one day billed 25 % over the logs, for the
    # reconciliation page to flag) and instance-hours of the self-hosted pools, idle hours too.
    bill_path = directory / f"{DEMO_PREFIX}focus-billing-export.csv"
    until = datetime.combine(end_day, time.min, tzinfo=UTC)  # no hour after the last complete day
    summary = write_focus_export(frame, bill_path, seed=seed, until=until)
    uploads.append(_ingest_file(bill_path, kind=Upload.Kind.BILLING))
    for pool in DEFAULT_POOLS:
        ServingPool.objects.update_or_create(
            name=pool.name,
            defaults={
                "resource_ids": list(pool.resource_ids),
                "tag_key": "pool",
                "tag_value": pool.name,
            },
        )
    benchmarks = demo_benchmarks_load(directory=directory)
    return DemoDataResult(
        uploads=uploads,
        skipped=False,
        planted=summary.discrepancy,
        benchmarks=benchmarks,
        budgets=tuple(demo_budgets_ensure(today=end_day)),
        anomalies=anomalies,
    )


def _ingest_file(path: Path, *, kind: str) -> Upload:
    with open(path, "rb") as source:
        upload = upload_create(source=source, original_name=path.name, kind=kind, enqueue=False)
    return upload_ingest(upload_id=upload.pk)
