"""The demo organisation end to end: logs and bill ingested, the planted discrepancy flagged,
the pools' books balanced, the benchmark sweep pair gated."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from audit_app.costs.billing import pool_reports, reconciliation
from audit_app.costs.pricing import normalize_model
from audit_app.demo.seed import demo_data_load
from audit_app.derived import derived_refresh
from audit_app.models import ServingPool, Upload
from audit_app.reporting.selectors import data_date_range
from benchmarks_app.models import BenchmarkRun, Gate

pytestmark = pytest.mark.django_db


def test_demo_month_is_reconciled_and_attributed(tmp_path: Path) -> None:
    # The same month `make run` loads.
    result = demo_data_load(days=30, scale=0.02, directory=tmp_path, today=date(2026, 11, 20))
    derived_refresh()  # as `manage.py seed_demo` does
    assert [u.status for u in result.uploads] == [Upload.Status.SUCCEEDED] * 3
    assert [u.kind for u in result.uploads] == ["token_log", "token_log", "billing"]
    # The benchmark sweep pair and its gate (tests/audit_app/demo/test_demo_benchmarks.py).
    assert result.benchmarks is not None and result.benchmarks.gate is not None
    assert result.benchmarks.gate.verdict == Gate.Verdict.PASS
    assert result.benchmarks.baseline.points.count() == 4
    assert result.benchmarks.candidate.points.count() == 4
    assert result.uploads[2].rows_rejected == 0
    assert result.planted is not None
    assert set(ServingPool.objects.values_list("name", flat=True)) == {"h100-pool", "trn1-pool"}

    first, last = data_date_range()
    rows = reconciliation(start=first, end=last)
    planted = [
        r
        for r in rows
        if r.provider == "openai"
        and r.model == normalize_model(result.planted.model)
        and r.day == result.planted.day
    ]
    assert len(planted) == 1 and planted[0].flagged
    assert round(planted[0].variance_percent) == 25
    # Other OpenAI / Anthropic lines whose logs carry their cost agree with the bill.
    agreeing = [r for r in rows if not r.flagged]
    assert len(agreeing) > 5

    reports = pool_reports(start=first, end=last)
    assert {r.pool.name for r in reports} == {"h100-pool", "trn1-pool"}
    for report in reports:
        result_ = report.attribution
        assert result_.attributed + result_.idle == result_.billed
        assert result_.by_workload  # the pool served someone
    # The H100 pool serves an office-hours copilot: nights and weekends are idle.
    h100 = next(r for r in reports if r.pool.name == "h100-pool")
    assert h100.attribution.idle > 0
    assert h100.attribution.hours_with_traffic < h100.attribution.hours_billed

    # Every clear demo workload is classified as its archetype says, with evidence.
    from audit_app.demo.workloads import DEFAULT_WORKLOADS
    from audit_app.models import Recommendation, Workload
    from audit_app.workloads.services import effective_class

    for spec in DEFAULT_WORKLOADS:
        workload = Workload.objects.get(name=spec.name)
        if spec.expected_class in ("realtime", "async"):
            assert effective_class(workload) == spec.expected_class, spec.name
            assert workload.classification.evidence, spec.name
    # Asynchronous workloads carry priced recommendations; a real-time one's count only with
    # measured evidence, and the rest wait for a benchmark.
    recommended = set(Recommendation.objects.values_list("workload__name", flat=True))
    assert recommended
    realtime = {s.name for s in DEFAULT_WORKLOADS if s.expected_class == "realtime"}
    for r in Recommendation.objects.filter(workload__name__in=realtime):
        plan = r.details["plan"]
        assert plan["moves_realtime"]
        assert plan["evidence"] == "measured" or plan["needs_benchmark"], r.target
    assert all(r.savings_monthly_usd > 0 for r in Recommendation.objects.all())

    # Loading again does nothing.
    again = demo_data_load(days=30, scale=0.02, directory=tmp_path)
    derived_refresh()  # as `manage.py seed_demo` does
    assert again.skipped and again.benchmarks is not None and again.benchmarks.skipped
    assert (BenchmarkRun.objects.count(), Gate.objects.count()) == (2, 1)


def test_a_demo_loaded_before_the_benchmarks_gets_them_on_the_next_seed(tmp_path: Path) -> None:
    demo_data_load(days=7, scale=0.005, directory=tmp_path, today=date(2026, 11, 20))
    derived_refresh()  # as `manage.py seed_demo` does
    # As a database seeded before the sweep pair existed: the logs and bill, no runs.
    Gate.objects.all().delete()
    BenchmarkRun.objects.all().delete()
    Upload.objects.filter(kind=Upload.Kind.BENCHMARK).delete()
    logs = set(Upload.objects.values_list("pk", flat=True))
    assert len(logs) == 3

    result = demo_data_load(days=7, scale=0.005, directory=tmp_path)
    derived_refresh()  # as `manage.py seed_demo` does
    assert result.skipped and result.uploads == []  # the logs are not loaded twice
    assert (
        set(Upload.objects.exclude(kind=Upload.Kind.BENCHMARK).values_list("pk", flat=True)) == logs
    )
    assert result.benchmarks is not None and not result.benchmarks.skipped
    assert (BenchmarkRun.objects.count(), Gate.objects.count()) == (2, 1)
