"""Plotly figure builders for benchmark runs and gates (pure, one builder per chart)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from audit_app.costs.costing import ScalingMode
from audit_app.reporting.charts import BASE_LAYOUT, figure_to_dict, plotly_texts
from benchmarks_app.metrics import METRIC_LABELS


def build_latency_distribution_figure(
    *, ttft_ms: Sequence[float], tpot_ms: Sequence[float]
) -> dict[str, Any]:
    """Histograms of per-request TTFT and TPOT."""
    figure = go.Figure()
    figure.add_trace(go.Histogram(name="TTFT (ms)", x=list(ttft_ms), opacity=0.7))
    figure.add_trace(go.Histogram(name="TPOT (ms)", x=list(tpot_ms), opacity=0.7))
    figure.update_layout(
        **{**BASE_LAYOUT, "hovermode": "closest"},
        barmode="overlay",
        title={"text": "TTFT and TPOT per request"},
        xaxis={"title": {"text": "Milliseconds"}, "rangemode": "nonnegative"},
        yaxis={"title": {"text": "Requests"}, "rangemode": "tozero"},
    )
    return figure_to_dict(figure)


def build_throughput_timeline_figure(
    *, seconds: Sequence[float], tokens_per_s: Sequence[float]
) -> dict[str, Any]:
    figure = go.Figure(
        go.Scatter(name="Output tokens/s", x=list(seconds), y=list(tokens_per_s), mode="lines")
    )
    figure.update_layout(
        **BASE_LAYOUT,
        title={"text": "Output tokens per second over the run"},
        xaxis={"title": {"text": "Seconds since start"}, "rangemode": "nonnegative"},
        yaxis={"title": {"text": "Tokens/s"}, "rangemode": "tozero"},
    )
    return figure_to_dict(figure)


def build_telemetry_figure(
    *, seconds: Sequence[float], utilization: Sequence[float | None], power: Sequence[float | None]
) -> dict[str, Any]:
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(name="GPU utilization (%)", x=list(seconds), y=list(utilization), mode="lines")
    )
    figure.add_trace(
        go.Scatter(name="Power (W)", x=list(seconds), y=list(power), mode="lines", yaxis="y2")
    )
    figure.update_layout(
        **BASE_LAYOUT,
        title={"text": "GPU utilization and power"},
        xaxis={"title": {"text": "Seconds since start"}, "rangemode": "nonnegative"},
        yaxis={"title": {"text": "Utilization (%)"}, "range": [0, 100]},
        yaxis2={
            "title": {"text": "Watts"},
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
            "rangemode": "tozero",
        },
    )
    return figure_to_dict(figure)


def build_cost_by_mode_figure(*, cost_by_mode: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Cost per 1M output tokens, baseline vs candidate, for each serving mode."""
    figure = go.Figure()
    for side in ("baseline", "candidate"):
        figure.add_trace(
            go.Bar(
                name=side.capitalize(),
                x=[mode.label for mode in ScalingMode],
                y=[_number(cost_by_mode.get(mode.value, {}).get(side)) for mode in ScalingMode],
            )
        )
    figure.update_layout(
        **BASE_LAYOUT,
        barmode="group",
        title={"text": "Cost per 1M output tokens by serving mode"},
        xaxis={"title": {"text": "Serving mode"}},
        # Costs are never negative: without this an all-zero chart draws a "$−1" tick.
        yaxis={"title": {"text": "USD per 1M tokens"}, "tickprefix": "$", "rangemode": "tozero"},
    )
    return figure_to_dict(figure)


def build_cost_vs_tpot_figure(*, points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Every run of the model: cost per 1M tokens against p95 TPOT (lower-left is better)."""
    figure = go.Figure(
        go.Scatter(
            name="Runs",
            x=[_number(p["tpot_p95_ms"]) for p in points],
            y=[_number(p["usd_per_million"]) for p in points],
            mode="markers+text",
            text=plotly_texts([p["label"] for p in points]),
            textposition="top center",
        )
    )
    figure.update_layout(
        **{**BASE_LAYOUT, "hovermode": "closest"},
        title={"text": f"Cost vs {METRIC_LABELS['tpot_p95_ms']}, runs of this model"},
        xaxis={
            "title": {"text": f"{METRIC_LABELS['tpot_p95_ms']} (ms)"},
            "rangemode": "nonnegative",
        },
        yaxis={
            "title": {"text": "USD per 1M output tokens"},
            "tickprefix": "$",
            "rangemode": "nonnegative",
        },
    )
    return figure_to_dict(figure)


def _number(value: Any) -> float | None:
    if value in (None, ""):
        return None
    return float(value)
