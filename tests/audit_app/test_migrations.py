"""Data migrations keep what was stored: run them forwards and backwards on real rows."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Count

from audit_app.ingestion.histograms import LatencyHistogram

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


@pytest.mark.django_db(transaction=True)
def test_0015_rewrites_rollup_providers_to_their_one_name() -> None:
    before = [("audit_app", "0012_hourly_histograms_binary")]
    after = [("audit_app", "0015_normalize_rollup_providers")]
    try:
        apps = _migrate(before)
        upload = apps.get_model("audit_app", "Upload").objects.create(
            kind="token_log", original_name="old.csv", sha256="b" * 64, size_bytes=1
        )
        hourly = apps.get_model("audit_app", "HourlyRollup")
        daily = apps.get_model("audit_app", "DailyRollup")
        hour = datetime(2026, 1, 1, tzinfo=UTC)
        # More "bedrock" rows than one update batch (5,000), and names already normal.
        spellings = ["bedrock"] * 5_001 + ["aws.bedrock", "Vertex_AI", "openai", "vllm", ""]
        hourly.objects.bulk_create(
            hourly(upload=upload, hour=hour, workload=f"wl-{n}", model="m", provider=p)
            for n, p in enumerate(spellings)
        )
        daily.objects.bulk_create(
            daily(upload=upload, day=date(2026, 1, 1), workload="wl", model="m", provider=p)
            for p in ("bedrock", "azure", "aws-bedrock", "anthropic")
        )
        versions = apps.get_model("audit_app", "DataVersion").objects
        assert not versions.exists()

        apps = _migrate(after)
        hourly = apps.get_model("audit_app", "HourlyRollup")
        counts = {
            row["provider"]: row["n"]
            for row in hourly.objects.values("provider").annotate(n=Count("id")).order_by()
        }
        assert counts == {"aws-bedrock": 5_002, "gcp-vertex": 1, "openai": 1, "vllm": 1, "": 1}
        daily = apps.get_model("audit_app", "DailyRollup")
        assert sorted(daily.objects.values_list("provider", flat=True)) == [
            "anthropic",
            "aws-bedrock",
            "aws-bedrock",
            "azure-openai",
        ]
        # Cached results of the old names are never read again.
        versions = apps.get_model("audit_app", "DataVersion").objects
        assert list(versions.values_list("pk", "version")) == [(1, 1)]

        apps = _migrate(before)  # backwards: nothing to undo, the names stay normal
        assert apps.get_model("audit_app", "HourlyRollup").objects.count() == len(spellings)
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_0034_rewrites_routed_rollup_models_to_their_one_id() -> None:
    before = [("audit_app", "0033_possible_restatements")]
    after = [("audit_app", "0034_canonical_rollup_models")]
    try:
        apps = _migrate(before)
        upload = apps.get_model("audit_app", "Upload").objects.create(
            kind="token_log", original_name="old.jsonl", sha256="c" * 64, size_bytes=1
        )
        hourly = apps.get_model("audit_app", "HourlyRollup")
        daily = apps.get_model("audit_app", "DailyRollup")
        hour = datetime(2026, 1, 1, tzinfo=UTC)
        # More routed rows than one update batch (5,000), names already canonical, a prefix
        # naming another provider (kept), and a row whose prefix names its missing provider.
        pairs = (
            [("openai", "openai/gpt-4o")] * 5_001
            + [("openai", "gpt-4o"), ("anthropic", "anthropic/claude-3-5-sonnet-20241022")]
            + [("vllm", "openai/gpt-oss-120b"), ("", "openai/gpt-4o-mini")]
        )
        hourly.objects.bulk_create(
            hourly(upload=upload, hour=hour, workload=f"wl-{n}", provider=p, model=m, requests=1)
            for n, (p, m) in enumerate(pairs)
        )
        daily.objects.bulk_create(
            daily(upload=upload, day=date(2026, 1, 1), workload="wl", provider=p, model=m)
            for p, m in [("openai", "openai/gpt-4o"), ("openai", "gpt-4o"), ("vllm", "m")]
        )
        budgets = apps.get_model("audit_app", "Budget").objects
        for name, value in [("routed", "openai/gpt-4o"), ("hf", "openai/gpt-oss-120b")]:
            budgets.create(name=name, scope_kind="model", scope_value=value, amount_usd=10)

        apps = _migrate(after)
        hourly = apps.get_model("audit_app", "HourlyRollup")
        counts = {
            (row["provider"], row["model"]): row["n"]
            for row in hourly.objects.values("provider", "model").annotate(n=Count("id")).order_by()
        }
        assert counts == {
            ("openai", "gpt-4o"): 5_002,
            ("anthropic", "claude-3-5-sonnet-20241022"): 1,
            ("vllm", "openai/gpt-oss-120b"): 1,
            ("openai", "gpt-4o-mini"): 1,
        }
        daily = apps.get_model("audit_app", "DailyRollup")
        assert sorted(daily.objects.values_list("provider", "model")) == [
            ("openai", "gpt-4o"),
            ("openai", "gpt-4o"),
            ("vllm", "m"),
        ]
        budgets = apps.get_model("audit_app", "Budget").objects
        # A routed name no row keeps any more follows its rows; one a row still has stays.
        assert dict(budgets.values_list("name", "scope_value")) == {
            "routed": "gpt-4o",
            "hf": "openai/gpt-oss-120b",
        }
        # Cached results of the old names are never read again.
        versions = apps.get_model("audit_app", "DataVersion").objects
        [(pk, version)] = versions.values_list("pk", "version")
        assert pk == 1 and version >= 1

        apps = _migrate(before)  # backwards: nothing to undo, the ids stay canonical
        assert apps.get_model("audit_app", "HourlyRollup").objects.count() == len(pairs)
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
