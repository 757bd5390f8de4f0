"""The restatement migration on charges stored before it: each gets the calendar month of its
start and its sub-account, and uploads already landed supersede in the order they landed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("audit_app", "0015_normalize_rollup_providers")]
AFTER = [("audit_app", "0016_billing_restatements")]


def _migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_0016_backfills_periods_and_supersedes_in_landing_order() -> None:
    try:
        apps = _migrate(BEFORE)
        upload_model = apps.get_model("audit_app", "Upload")
        charge_model = apps.get_model("audit_app", "BillingCharge")
        landed = datetime(2026, 12, 1, tzinfo=UTC)

        def bill(name: str, minutes: int, status: str = "succeeded") -> Any:
            return upload_model.objects.create(
                kind="billing",
                original_name=name,
                sha256=name.ljust(64, "0"),
                status=status,
                finished_at=landed + timedelta(minutes=minutes),
            )

        def charge(upload: Any, start: datetime, cost: str, account: str = "sub-1") -> None:
            charge_model.objects.create(
                upload=upload,
                line=2,
                provider="aws",
                charge_category="Usage",
                period_start=start,
                period_end=start + timedelta(hours=1),
                billed_cost=Decimal(cost),
                currency="USD",
                account_id=account,
            )

        # Ids in reverse of landing order, so the order must come from finished_at.
        newest, oldest, middle = bill("newest", 30), bill("oldest", 10), bill("middle", 20)
        other_account = bill("other", 40)
        failed = bill("failed", 50, status="failed")
        oct_31_late = datetime(2026, 10, 31, 23, tzinfo=UTC)
        nov_2 = datetime(2026, 11, 2, tzinfo=UTC)
        charge(oldest, oct_31_late, "1.00")
        charge(oldest, nov_2, "2.00")
        charge(middle, nov_2, "3.00")
        charge(newest, nov_2, "4.00")
        charge(other_account, nov_2, "5.00", account="sub-2")
        charge(failed, nov_2, "6.00")

        apps = _migrate(AFTER)
        charges = {
            (c.upload.original_name, c.period_start): c
            for c in apps.get_model("audit_app", "BillingCharge").objects.select_related(
                "upload", "superseded_by"
            )
        }
        october = charges[("oldest", oct_31_late)]
        assert (october.billing_period_start, october.billing_period_end) == (
            datetime(2026, 10, 1, tzinfo=UTC),
            datetime(2026, 11, 1, tzinfo=UTC),
        )
        assert october.billing_account == "sub-1"
        assert october.superseded_by is None  # nobody restated October

        def successor(name: str) -> str | None:
            found = charges[(name, nov_2)].superseded_by
            return None if found is None else found.original_name

        assert successor("oldest") == "middle"
        assert successor("middle") == "newest"
        assert successor("newest") is None
        assert successor("other") is None  # another account
        assert successor("failed") is None  # never landed, never counts
        assert apps.get_model("audit_app", "BillingPeriodKey").objects.count() == 3
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
