"""Plotly figure builders for benchmark runs and gates (pure, one builder per chart)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit_app.costs.costing import ScalingMode
from audit_app.reporting.charts import BASE_LAYOUT, Figure, bar, histogram, plotly_texts, scatter
from benchmarks_app.metrics import METRIC_LABELS, SERVING_HOSTED


def build_latency_distribution_figure(
    *, ttft_ms: Sequence[float], tpot_ms: Sequence[float]
) -> dict[str, Any]:
    """Histograms of per-request TTFT (left panel) and TPOT (right panel), each on its own
    millisecond axis: TPOT's tens of milliseconds would be one thin bar on TTFT's axis."""
    figure = Figure()
    figure.add_trace(histogram(name="TTFT (ms)", x=list(ttft_ms)))
    figure.add_trace(histogram(name="TPOT (ms)", x=list(tpot_ms), xaxis="x2", yaxis="y2"))
    figure.update_layout(
        **{**BASE_LAYOUT, "hovermode": "closest"},
        title={"text": "TTFT and TPOT per request"},
        xaxis={"title": {"text": "TTFT (ms)"}, "rangemode": "nonnegative", "domain": [0, 0.46]},
        yaxis={"title": {"text": "Requests"}, "rangemode": "tozero"},
        xaxis2={
            "title": {"text": "TPOT (ms)"},
            "rangemode": "nonnegative",
            "domain": [0.54, 1],
            "anchor": "y2",
        },
        yaxis2={"rangemode": "tozero", "anchor": "x2"},
    )
    return figure.to_dict()


def build_throughput_timeline_figure(
    *, seconds: Sequence[float], tokens_per_s: Sequence[float]
) -> dict[str, Any]:
    figure = Figure(
        scatter(name="Output tokens/s", x=list(seconds), y=list(tokens_per_s), mode="lines")
    )
    figure.update_layout(
        **BASE_LAYOUT,
        title={"text": "Output tokens per second over the run"},
        xaxis={"title": {"text": "Seconds since start"}, "rangemode": "nonnegative"},
        yaxis={"title": {"text": "Tokens/s"}, "rangemode": "tozero"},
    )
    return figure.to_dict()


def build_telemetry_figure(
    *, seconds: Sequence[float], utilization: Sequence[float | None], power: Sequence[float | None]
) -> dict[str, Any]:
    figure = Figure()
    figure.add_trace(
        scatter(name="GPU utilization (%)", x=list(seconds), y=list(utilization), mode="lines")
    )
    figure.add_trace(
        scatter(name="Power (W)", x=list(seconds), y=list(power), mode="lines", yaxis="y2")
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
    return figure.to_dict()


def build_cost_by_mode_figure(*, cost_by_mode: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Cost per 1M output tokens, baseline vs candidate, for each serving mode."""
    figure = Figure()
    for side in ("baseline", "candidate"):
        figure.add_trace(
            bar(
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
    return figure.to_dict()


def build_run_curve_figure(*, points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A run's curve: decode tok/s against p95 TPOT, one marker per load point, joined in
    order of TPOT (points lacking either value are left out)."""
    known = sorted(
        (
            (x, y, str(p.get("label") or ""))
            for p in points
            if (x := _number(p.get("tpot_p95_ms"))) is not None
            and (y := _number(p.get("decode_tokens_per_s"))) is not None
        ),
        key=lambda row: row[0],
    )
    figure = Figure(
        scatter(
            name="Load points",
            x=[x for x, _, _ in known],
            y=[y for _, y, _ in known],
            mode="lines+markers",
            text=plotly_texts([label for _, _, label in known]),
            hovertemplate="%{text}<br>p95 TPOT %{x:.1f} ms<br>%{y:,.1f} tok/s<extra></extra>",
        )
    )
    figure.update_layout(
        **{**BASE_LAYOUT, "hovermode": "closest"},
        title={"text": f"Decode tok/s vs {METRIC_LABELS['tpot_p95_ms']} across the points"},
        xaxis={
            "title": {"text": f"{METRIC_LABELS['tpot_p95_ms']} (ms)"},
            "rangemode": "tozero",
        },
        yaxis={"title": {"text": "Decode tok/s"}, "rangemode": "tozero"},
    )
    return figure.to_dict()


# The Pareto chart's axes: interactivity across, throughput per accelerator (or per dollar when
# a side is a hosted API, which has no accelerators of its own) up.
PARETO_X_TITLE = "Interactivity: tok/s per user (1000 / p95 TPOT)"
PARETO_Y_ACCELERATOR = "Output tok/s per accelerator"
PARETO_Y_DOLLAR = "Output tokens per dollar"
PARETO_TITLE = "Throughput per accelerator vs interactivity (Pareto)"
PARETO_TITLE_DOLLAR = "Tokens per dollar vs interactivity (Pareto; a side is a hosted API)"
# plotly's first two colours, as the cost-by-mode chart draws the two sides on the same page.
SIDE_COLOURS = {"baseline": "#636efa", "candidate": "#EF553B"}
SLO_COLOUR = "#1b1f24"


def pareto_uses_dollars(serving: Mapping[str, str]) -> bool:
    """True when either side is a hosted API: the chart then plots tokens per dollar."""
    return any(value == SERVING_HOSTED for value in serving.values())


def build_pareto_figure(
    *,
    curves: Mapping[str, Sequence[Mapping[str, Any]]],
    slo: Mapping[str, Any] | None,
    serving: Mapping[str, str],
) -> dict[str, Any]:
    """A gate's throughput–interactivity trade-off, from its recorded `curves`: one line per
    side through its points in order of interactivity (1000 / p95 TPOT), the SLO's p95 TPOT as
    a vertical line at 1000 / limit, and each side's operating point as a star."""
    dollars = pareto_uses_dollars(serving)
    y_key = "tokens_per_dollar" if dollars else "per_accelerator"
    figure = Figure()
    stars: list[tuple[float, float, str, str]] = []
    for side in ("baseline", "candidate"):
        rows = sorted(
            (
                (x, y, str(row.get("label") or ""), bool(row.get("operating")))
                for row in curves.get(side) or ()
                if (x := _number(row.get("interactivity"))) is not None
                and (y := _number(row.get(y_key))) is not None
            ),
            key=lambda row: row[0],
        )
        figure.add_trace(
            scatter(
                name=side.capitalize(),
                x=[x for x, _, _, _ in rows],
                y=[y for _, y, _, _ in rows],
                mode="lines+markers",
                line={"color": SIDE_COLOURS[side]},
                text=plotly_texts([label for _, _, label, _ in rows]),
            )
        )
        stars.extend((x, y, side, label) for x, y, label, operating in rows if operating)
    if stars:
        figure.add_trace(
            scatter(
                name="operating point",
                x=[x for x, _, _, _ in stars],
                y=[y for _, y, _, _ in stars],
                mode="markers",
                marker={
                    "symbol": "star",
                    "size": 18,
                    "color": [SIDE_COLOURS[side] for _, _, side, _ in stars],
                    "line": {"width": 1, "color": "#1b1f24"},
                },
                text=plotly_texts(
                    [f"{side.capitalize()} operating point: {label}" for _, _, side, label in stars]
                ),
            )
        )
    _pareto_slo_line(figure, slo)
    figure.update_layout(
        **{**BASE_LAYOUT, "hovermode": "closest"},
        title={"text": PARETO_TITLE_DOLLAR if dollars else PARETO_TITLE},
        xaxis={"title": {"text": PARETO_X_TITLE}, "rangemode": "tozero"},
        yaxis={
            "title": {"text": PARETO_Y_DOLLAR if dollars else PARETO_Y_ACCELERATOR},
            "rangemode": "tozero",
        },
    )
    return figure.to_dict()


def _pareto_slo_line(figure: Figure, slo: Mapping[str, Any] | None) -> None:
    """A p95 TPOT limit of N ms is a vertical line at 1000 / N tok/s per user: points right of
    it are fast enough for each user."""
    limit = _number((slo or {}).get("tpot_ms"))
    if not limit or limit <= 0:
        return
    figure.add_shape(
        type="line",
        x0=1000 / limit,
        x1=1000 / limit,
        xref="x",
        y0=0,
        y1=1,
        yref="paper",
        line={"color": SLO_COLOUR, "dash": "dash", "width": 2},
    )
    figure.add_annotation(
        x=1000 / limit,
        xref="x",
        y=1,
        yref="paper",
        text=f"SLO p95 TPOT ≤ {limit:g} ms",
        showarrow=False,
        xanchor="center",
        yanchor="bottom",  # above the plot, clear of the points
        font={"color": SLO_COLOUR},
    )


def _number(value: Any) -> float | None:
    if value in (None, ""):
        return None
    return float(value)
