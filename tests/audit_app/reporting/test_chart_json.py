"""Every figure builder writes exactly the JSON plotly.py would: each output is passed back
through ``go.Figure`` (which validates every property name and value, raising on any it does
not know) and serialized by plotly's own encoder; the result must equal the builder's dict.
The builders write dicts directly for speed (audit_app.reporting.charts, module docstring)."""

from __future__ import annotations

import json
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import plotly.graph_objects as go
import pytest

from audit_app.budgets.charts import build_budget_forecast_figure
from audit_app.budgets.forecast import Forecast, ForecastDay
from audit_app.reporting import charts
from benchmarks_app import charts as bench_charts

DAYS = [date(2026, 11, 1) + timedelta(days=i) for i in range(3)]
LINK = '<a href="https://evil.example">x</a>'


def _point(label: str, tpot: float, per_gpu: float, operating: bool) -> dict[str, object]:
    return {
        "label": label,
        "interactivity": 1000 / tpot,
        "per_accelerator": per_gpu,
        "tokens_per_dollar": per_gpu * 10,
        "operating": operating,
        "tpot_p95_ms": tpot,
        "decode_tokens_per_s": per_gpu * 2,
    }


FORECAST = Forecast(
    period_start=DAYS[0],
    period_end=DAYS[2],
    as_of=DAYS[1],
    actual_usd=Decimal("20"),
    forecast_usd=Decimal("31"),
    low_usd=Decimal("28"),
    high_usd=Decimal("35"),
    method="test",
    days=tuple(
        ForecastDay(
            day=d,
            actual_usd=Decimal(10 * (i + 1)) if i < 2 else None,
            forecast_usd=Decimal(10 * (i + 1)) + (1 if i == 2 else 0),
            low_usd=Decimal(9 * (i + 1)),
            high_usd=Decimal(12 * (i + 1)),
        )
        for i, d in enumerate(DAYS)
    ),
)
CURVES = {
    "baseline": [_point("c4", 20, 500.0, True), _point("c16", 40, 1000.0, False)],
    "candidate": [_point("c4", 18, 520.0, False), _point(LINK, 30, 1200.0, True)],
}

FIGURES: dict[str, Any] = {
    "uploads": lambda: charts.build_uploads_per_day_figure(
        days=DAYS, counts_by_kind={"token_log": [1, 0, 2], LINK: [0, 1, 0]}
    ),
    "spend": lambda: charts.build_spend_per_day_figure(
        days=DAYS,
        series={"openai": [Decimal("1.5"), Decimal(0), Decimal("2.25")], LINK: [Decimal(1)] * 3},
        dimension_label="provider",
        idle=[Decimal("0.5"), Decimal(0), Decimal(0)],
    ),
    "top": lambda: charts.build_top_workloads_figure(
        names=["big", LINK], spend=[Decimal("9.99"), Decimal(1)]
    ),
    "usage": lambda: charts.build_daily_usage_figure(
        days=DAYS,
        api_spend=[Decimal(1)] * 3,
        gpu_cost=[Decimal(0), Decimal("2.5"), Decimal(0)],
        input_tokens=[10, 20, 30],
        output_tokens=[1, 2, 3],
    ),
    "heatmap": lambda: charts.build_hour_of_week_figure(
        matrix=[[(d * 24 + h) % 5 for h in range(24)] for d in range(7)]
    ),
    "latency": lambda: charts.build_latency_figure(
        percentiles={"TTFT": [100.0, 180.0, None], "TPOT": [None] * 3}
    ),
    "pools": lambda: charts.build_pool_attribution_figure(
        pools=["a100", LINK],
        by_workload={"chat": [Decimal(3), Decimal(0)], "rag": [Decimal(1), Decimal(2)]},
        idle=[Decimal("0.5"), Decimal(4)],
    ),
    "reconciliation": lambda: charts.build_reconciliation_figure(
        days=DAYS, billed=[Decimal(2), None, Decimal(1)], estimated=[Decimal("1.9"), None, None]
    ),
    "cost": lambda: charts.build_cost_comparison_figure(
        current=Decimal(200), projected=Decimal(120), target=LINK
    ),
    "savings plan": lambda: charts.build_savings_plan_figure(
        after=Decimal("63.5"), shares=[("copilot: hardware", Decimal(80)), (LINK, Decimal(1))]
    ),
    "pool replicas": lambda: charts.build_pool_replicas_figure(
        demanded=[0.5, 1.25, 2.0], before=[2.0, 2.0, 2.0], after=[1.0, 2.0, 2.0]
    ),
    "anomalies": lambda: charts.build_anomaly_causes_figure(
        labels=["2026-11-01 chat", LINK],
        volume=[Decimal(2), Decimal(-1)],
        mix=[Decimal(1), Decimal(3)],
        price=[Decimal(0), Decimal(0)],
    ),
    "bench distribution": lambda: bench_charts.build_latency_distribution_figure(
        ttft_ms=[120.0, 130.5], tpot_ms=[20.0]
    ),
    "bench timeline": lambda: bench_charts.build_throughput_timeline_figure(
        seconds=[0, 1.5], tokens_per_s=[10.0, 12.0]
    ),
    "bench telemetry": lambda: bench_charts.build_telemetry_figure(
        seconds=[0, 1], utilization=[None, 80.0], power=[250.0, None]
    ),
    "bench cost by mode": lambda: bench_charts.build_cost_by_mode_figure(
        cost_by_mode={"always_on": {"baseline": "1.5", "candidate": "1.2"}}
    ),
    "bench run curve": lambda: bench_charts.build_run_curve_figure(
        points=[_point("c4", 20, 500.0, False), _point(LINK, 40, 900.0, False)]
    ),
    "bench pareto with SLO": lambda: bench_charts.build_pareto_figure(
        curves=CURVES,
        slo={"tpot_ms": 25.0},
        serving={"baseline": "self-hosted", "candidate": "self-hosted"},
    ),
    "bench pareto hosted": lambda: bench_charts.build_pareto_figure(
        curves=CURVES, slo=None, serving={"baseline": "self-hosted", "candidate": "hosted"}
    ),
    "budget forecast": lambda: build_budget_forecast_figure(forecast=FORECAST, amount=Decimal(30)),
}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_the_builder_writes_what_plotly_would(name: str) -> None:
    figure = FIGURES[name]()
    through_plotly = json.loads(go.Figure(figure).to_json())
    assert through_plotly == json.loads(json.dumps(figure))
    assert figure["layout"]["template"] == through_plotly["layout"]["template"]
    assert figure["data"]  # every builder above draws at least one trace
