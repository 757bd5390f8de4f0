"""Data migrations keep what was stored: run them forwards and backwards on real rows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from audit_app.histograms import LatencyHistogram

BEFORE = [("audit_app", "0011_data_version")]
AFTER = [("audit_app", "0012_hourly_histograms_binary")]
NAMES = ("ttft_histogram", "latency_histogram", "tpot_histogram")


def _migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_0012_converts_hourly_histograms_to_bytes_and_back() -> None:
    latency = LatencyHistogram.from_values([0.0, 12.5, 12.6, 3000.0, 45000.0])
    tpot = LatencyHistogram.from_values([20.0] * 7)
    try:
        apps = _migrate(BEFORE)
        upload = apps.get_model("audit_app", "Upload").objects.create(
            kind="token_log", original_name="old.csv", sha256="a" * 64, size_bytes=1
        )
        hourly = apps.get_model("audit_app", "HourlyRollup")
        hour = datetime(2026, 1, 1, tzinfo=UTC)
        # Enough rows for more than one conversion batch (2,000).
        hourly.objects.bulk_create(
            hourly(
                upload=upload,
                hour=hour,
                workload=f"wl-{n}",
                model="m",
                latency_histogram=latency.to_json(),
                tpot_histogram=tpot.to_json() if n % 2 else {},
                ttft_histogram={},
            )
            for n in range(2_100)
        )

        apps = _migrate(AFTER)
        rows = apps.get_model("audit_app", "HourlyRollup").objects.order_by("workload")
        stored = {r.workload: r for r in rows}
        assert len(stored) == 2_100
        for name in ("wl-0", "wl-1", "wl-2099"):
            row = stored[name]
            assert LatencyHistogram.from_bytes(bytes(row.latency_histogram)) == latency
            assert bytes(row.ttft_histogram) == b""
        assert bytes(stored["wl-1"].tpot_histogram) == tpot.to_bytes()
        assert bytes(stored["wl-0"].tpot_histogram) == b""

        apps = _migrate(BEFORE)
        back = {
            r.workload: r
            for r in apps.get_model("audit_app", "HourlyRollup").objects.filter(
                workload__in=["wl-0", "wl-1"]
            )
        }
        assert LatencyHistogram.from_json(back["wl-1"].latency_histogram) == latency
        assert LatencyHistogram.from_json(back["wl-1"].tpot_histogram) == tpot
        assert back["wl-0"].tpot_histogram == {}
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
