"""Plotly figure builders: one ``build_<chart>_figure`` per chart, pure and Django-free.

Each returns a figure as a JSON-ready dict that ``static/js/charts.js`` draws with plotly.js.
A figure with no data point (`is_empty`) is not drawn at all: ``templates/partials/chart.html``
says so in a sentence instead of drawing empty axes. Axes of amounts that are never negative
(money, counts, latencies) start at zero (``rangemode``), so an all-zero chart never shows a
negative tick.

plotly.js reads a subset of HTML (``<a href>``, ``<b>``, ``<br>``...) in every text it draws:
trace names, legend entries, category tick labels, hover text, titles. So every label a caller
passes in (workload, team, model, provider, pool and run names, a recommendation's target)
goes through ``plotly_text`` before it reaches a figure; a builder's own constant labels do not.

Builders write plotly's JSON directly (`Figure`, `bar`, `scatter`...) rather than through
``plotly.graph_objects``: validating every property and deep-copying the layout made figure
building most of a page's CPU time (about 60 % of the overview's). The dicts are exactly what
plotly.py would send, its default template included (tests/audit_app/reporting/test_charts.py
passes every builder's output back through ``go.Figure`` and compares).
"""

from __future__ import annotations

import base64
import functools
import html
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import plotly.io as pio

# The layout every figure starts from (this module's builders and `benchmarks_app.charts`).
BASE_LAYOUT: dict[str, Any] = {
    # Wide enough for the tick labels and axis titles the charts draw (money ticks on the left,
    # two-line dates at the bottom): the template's automargin then has nothing to push, and
    # each chart is laid out once instead of twice (about half of the drawing time).
    "margin": {"l": 84, "r": 16, "t": 48, "b": 76},
    "font": {"family": "system-ui, sans-serif", "size": 13},
    "paper_bgcolor": "#ffffff",
    "plot_bgcolor": "#ffffff",
    "hovermode": "x unified",
    # Above the plot, right of the title, so it never covers the x-axis title.
    "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
}


IDLE_COLOUR = "#b0b7c3"


def plotly_text(label: str) -> str:
    """``label`` escaped for plotly.js, which then draws it literally: a workload named
    ``<a href="https://evil.example">x</a>`` is shown as that text, not as a link.

    plotly.js turns ``&lt;``, ``&gt;``, ``&amp;`` and numeric entities back into characters
    after reading its tags, but not ``&quot;``, so quotes become ``&#34;`` and ``&#39;``.
    """
    return html.escape(label, quote=False).replace('"', "&#34;").replace("'", "&#39;")


def plotly_texts(labels: Sequence[str]) -> list[str]:
    return [plotly_text(label) for label in labels]


@functools.cache
def plotly_template() -> dict[str, Any]:
    """plotly.py's default template as JSON: what every figure it builds carries in its layout
    (colours, fonts, grid lines), so figures look as they did when built by plotly.py."""
    return dict(pio.templates[pio.templates.default].to_plotly_json())


class Figure:
    """The part of ``go.Figure`` the builders use, writing the JSON plotly.js reads directly.

    ``update_layout`` sets top-level layout keys (each builder sets each key once, so plotly's
    deep merge and a plain update agree); shapes and annotations are appended as plotly does."""

    def __init__(self, *traces: dict[str, Any]) -> None:
        self.data: list[dict[str, Any]] = list(traces)
        self.layout: dict[str, Any] = {}

    def add_trace(self, trace: dict[str, Any]) -> None:
        self.data.append(trace)

    def update_layout(self, **layout: Any) -> None:
        self.layout.update(layout)

    def add_shape(self, **shape: Any) -> None:
        self.layout.setdefault("shapes", []).append(shape)

    def add_annotation(self, **annotation: Any) -> None:
        self.layout.setdefault("annotations", []).append(annotation)

    def to_dict(self) -> dict[str, Any]:
        return {"data": self.data, "layout": {"template": plotly_template(), **self.layout}}


def bar(**attributes: Any) -> dict[str, Any]:
    return {"type": "bar", **attributes}


def scatter(**attributes: Any) -> dict[str, Any]:
    return {"type": "scatter", **attributes}


def heatmap(**attributes: Any) -> dict[str, Any]:
    return {"type": "heatmap", **attributes}


def histogram(**attributes: Any) -> dict[str, Any]:
    return {"type": "histogram", **attributes}


def figure_to_dict(figure: go.Figure) -> dict[str, Any]:
    """JSON-safe plain data (plotly's own encoder handles dates and numpy values)."""
    return json.loads(figure.to_json())


def is_empty(figure: Mapping[str, Any] | None) -> bool:
    """True when no trace of the figure holds a data point (or there is no figure).

    A point needs a value in every coordinate its trace carries: x and y (just one of them for
    a histogram), or z for a heatmap. So bars over a window's days with no amount at all are
    empty, while bars of zeros are not (zero is a value). NaN counts as no value.
    """
    if not figure:
        return True
    return not any(_has_point(trace) for trace in figure.get("data") or ())


def _has_point(trace: Mapping[str, Any]) -> bool:
    if "z" in trace:
        return any(value is not None for value in _values(trace["z"]))
    columns = [list(_values(trace[axis])) for axis in ("x", "y") if axis in trace]
    if not columns:
        return False
    return any(all(value is not None for value in point) for point in zip(*columns, strict=False))


def _values(array: Any) -> Iterator[Any]:
    """The values of a trace's data array, flattened, with NaN as None. Plotly encodes numpy
    arrays as typed arrays (``{"dtype": "f8", "bdata": base64}``); lists come as they are."""
    if isinstance(array, Mapping) and "bdata" in array:
        decoded = np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"]))
        array = decoded.tolist()
    if not isinstance(array, list | tuple):
        yield array
        return
    for value in array:
        if isinstance(value, list | tuple):
            yield from _values(value)
        elif isinstance(value, float) and math.isnan(value):
            yield None
        else:
            yield value


def build_uploads_per_day_figure(
    *, days: Sequence[date], counts_by_kind: Mapping[str, Sequence[int]]
) -> dict[str, Any]:
    """Stacked bars: how many files were uploaded each day, one trace per upload kind."""
    figure = Figure()
    for kind, counts in counts_by_kind.items():
        figure.add_trace(
            bar(name=plotly_text(kind), x=[d.isoformat() for d in days], y=list(counts))
        )
    figure.update_layout(
        **BASE_LAYOUT,
        barmode="stack",
        title={"text": "Uploads per day"},
        xaxis={"title": {"text": "Day (UTC)"}, "type": "date"},
        yaxis={"title": {"text": "Uploads"}, "rangemode": "tozero", "dtick": 1},
    )
    return figure.to_dict()


def _floats(values: Sequence[Decimal | float | int | None]) -> list[float | None]:
    return [None if v is None else float(v) for v in values]


def build_spend_per_day_figure(
    *,
    days: Sequence[date],
    series: Mapping[str, Sequence[Decimal]],
    dimension_label: str,
    idle: Sequence[Decimal] = (),
    idle_label: str = "Idle GPU",
) -> dict[str, Any]:
    """Stacked bars of daily spend, one trace per workload / team / model / provider / pool,
    and the serving pools' idle cost in grey on top when there is any."""
    figure = Figure()
    x = [d.isoformat() for d in days]
    for name, values in series.items():
        figure.add_trace(
            bar(
                name=plotly_text(name),
                x=x,
                y=_floats(values),
                hovertemplate="%{y:$,.2f}<extra>%{fullData.name}</extra>",
            )
        )
    if any(idle):
        figure.add_trace(
            bar(
                name=plotly_text(idle_label),
                x=x,
                y=_floats(list(idle)),
                marker={"color": IDLE_COLOUR},
                hovertemplate="%{y:$,.2f}<extra>%{fullData.name}</extra>",
            )
        )
    figure.update_layout(
        **BASE_LAYOUT,
        barmode="stack",
        title={"text": f"Spend per day by {plotly_text(dimension_label)}"},
        xaxis={"title": {"text": "Day (UTC)"}, "type": "date"},
        yaxis={"title": {"text": "Spend (USD)"}, "rangemode": "tozero", "tickprefix": "$"},
    )
    return figure.to_dict()


def build_top_workloads_figure(*, names: Sequence[str], spend: Sequence[Decimal]) -> dict[str, Any]:
    """Horizontal bars: the workloads that cost the most, largest on top, on a log axis with a
    tick per power of ten (``$1``, ``$10``, ``$1k``...), so a $300 workload stays visible beside
    an $85.9k one."""
    amounts = _floats(list(spend))
    tickvals, ticktext = decade_ticks([a for a in amounts if a is not None], prefix="$")
    figure = Figure(
        bar(
            name="Spend",
            x=amounts[::-1],
            y=plotly_texts(names)[::-1],
            orientation="h",
            hovertemplate="%{y}: %{x:$,.2f}<extra></extra>",
        )
    )
    layout = {
        **BASE_LAYOUT,
        "hovermode": "closest",
        "margin": {"l": 180, "r": 16, "t": 40, "b": 56},
    }
    figure.update_layout(
        **layout,
        title={"text": "Top workloads by spend"},
        xaxis={
            "title": {"text": "Spend (USD, log scale)"},
            "type": "log",
            "tickvals": tickvals,
            "ticktext": ticktext,
        },
        yaxis={"title": {"text": "Workload"}, "automargin": True},
    )
    return figure.to_dict()


_SI_STEPS = ((1e9, "B"), (1e6, "M"), (1e3, "k"))


def decade_ticks(values: Sequence[float], *, prefix: str = "") -> tuple[list[float], list[str]]:
    """Ticks for a log axis over the positive ``values``: each power of ten from the one at or
    below the smallest to the one at or above the largest, written short (``$0.01``, ``$1``,
    ``$10k``, ``$1M``). No positive value: no ticks (plotly chooses)."""
    positive = [v for v in values if v > 0]
    if not positive:
        return [], []
    low = math.floor(math.log10(min(positive)))
    high = max(math.ceil(math.log10(max(positive))), low + 1)
    tickvals = [10.0**power for power in range(low, high + 1)]
    return tickvals, [prefix + _short(v) for v in tickvals]


def _short(value: float) -> str:
    for size, suffix in _SI_STEPS:
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}" if value >= 1 else f"{value:.{-math.floor(math.log10(value))}f}"


def build_daily_usage_figure(
    *,
    days: Sequence[date],
    api_spend: Sequence[Decimal],
    gpu_cost: Sequence[Decimal],
    input_tokens: Sequence[int],
    output_tokens: Sequence[int],
) -> dict[str, Any]:
    """Daily spend (stacked bars, left axis: API spend, then the GPU share when there is one)
    with input and output tokens (lines, right axis)."""
    x = [d.isoformat() for d in days]
    figure = Figure()
    figure.add_trace(
        bar(
            name="API spend (USD)",
            x=x,
            y=_floats(api_spend),
            yaxis="y",
            hovertemplate="%{y:$,.2f}<extra>%{fullData.name}</extra>",
        )
    )
    if any(gpu_cost):
        figure.add_trace(
            bar(
                name="GPU share (USD)",
                x=x,
                y=_floats(gpu_cost),
                yaxis="y",
                hovertemplate="%{y:$,.2f}<extra>%{fullData.name}</extra>",
            )
        )
    figure.add_trace(
        scatter(name="Input tokens", x=x, y=list(input_tokens), mode="lines", yaxis="y2")
    )
    figure.add_trace(
        scatter(name="Output tokens", x=x, y=list(output_tokens), mode="lines", yaxis="y2")
    )
    figure.update_layout(
        **BASE_LAYOUT,
        barmode="stack",
        title={"text": "Daily spend and tokens"},
        xaxis={"title": {"text": "Day (UTC)"}, "type": "date"},
        yaxis={"title": {"text": "Spend (USD)"}, "tickprefix": "$", "rangemode": "tozero"},
        yaxis2={
            "title": {"text": "Tokens"},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
        },
    )
    return figure.to_dict()


WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def build_hour_of_week_figure(*, matrix: Sequence[Sequence[int]]) -> dict[str, Any]:
    """Heatmap of requests per weekday and UTC hour: office hours, nightly jobs, flat 24/7."""
    figure = Figure(
        heatmap(
            name="Requests",
            z=[list(row) for row in matrix],
            x=list(range(24)),
            y=list(WEEKDAYS),
            # plotly.py sends a named scale as its colour stops; so do we (plotly.js's own
            # "Blues" differs).
            colorscale=plotly.colors.get_colorscale("Blues"),
            hovertemplate="%{y} %{x}:00 UTC: %{z} requests<extra></extra>",
            colorbar={"title": {"text": "Requests"}},
        )
    )
    layout = {**BASE_LAYOUT, "hovermode": "closest"}
    figure.update_layout(
        **layout,
        title={"text": "Requests by hour of week (UTC)"},
        xaxis={"title": {"text": "Hour of day (UTC)"}, "dtick": 2},
        yaxis={"title": {"text": "Weekday"}, "autorange": "reversed"},
    )
    return figure.to_dict()


def build_latency_figure(*, percentiles: dict[str, Sequence[float | None]]) -> dict[str, Any]:
    """p50 / p95 / p99 bars of each latency measure in a panel of its own, side by side, each
    with its own millisecond axis: TTFT, TPOT and end-to-end differ by orders of magnitude, so
    on one axis the smaller ones vanish."""
    labels = ["p50", "p95", "p99"]
    figure = Figure()
    count = len(percentiles)
    gap = 0.08
    width = (1.0 - gap * (count - 1)) / count if count else 1.0
    axes: dict[str, Any] = {}
    for position, (measure, values) in enumerate(percentiles.items()):
        suffix = "" if position == 0 else str(position + 1)
        trace = bar(name=plotly_text(measure), x=labels, y=list(values))
        if suffix:
            trace.update(xaxis=f"x{suffix}", yaxis=f"y{suffix}")
        figure.add_trace(trace)
        left = position * (width + gap)
        axes[f"xaxis{suffix}"] = {
            "title": {"text": "Percentile"},
            "domain": [round(left, 4), round(min(left + width, 1.0), 4)],
            "anchor": f"y{suffix}",
        }
        axes[f"yaxis{suffix}"] = {
            "title": {"text": f"{plotly_text(measure)} (ms)"},
            "rangemode": "tozero",
            "anchor": f"x{suffix}",
        }
    figure.update_layout(**BASE_LAYOUT, title={"text": "Latency percentiles"}, **axes)
    return figure.to_dict()


def build_pool_attribution_figure(
    *, pools: Sequence[str], by_workload: dict[str, Sequence[Decimal]], idle: Sequence[Decimal]
) -> dict[str, Any]:
    """Stacked bars per pool: cost attributed to each workload, and idle cost in grey."""
    figure = Figure()
    x = plotly_texts(pools)
    for workload, amounts in by_workload.items():
        figure.add_trace(bar(name=plotly_text(workload), x=x, y=_floats(list(amounts))))
    figure.add_trace(bar(name="Idle", x=x, y=_floats(list(idle)), marker={"color": IDLE_COLOUR}))
    figure.update_layout(
        **BASE_LAYOUT,
        barmode="stack",
        title={"text": "Self-hosted pools: attributed and idle cost"},
        xaxis={"title": {"text": "Serving pool"}},
        yaxis={"title": {"text": "Cost (USD)"}, "tickprefix": "$", "rangemode": "tozero"},
    )
    return figure.to_dict()


def build_reconciliation_figure(
    *,
    days: Sequence[date],
    billed: Sequence[Decimal | None],
    estimated: Sequence[Decimal | None],
) -> dict[str, Any]:
    """Billed vs estimated per day, side by side (None: nothing to reconcile that day)."""
    x = [d.isoformat() for d in days]
    figure = Figure()
    figure.add_trace(bar(name="Billed", x=x, y=_floats(list(billed))))
    figure.add_trace(bar(name="Estimated from token logs", x=x, y=_floats(list(estimated))))
    figure.update_layout(
        **BASE_LAYOUT,
        barmode="group",
        title={"text": "Billed vs estimated per day"},
        xaxis={"title": {"text": "Day (UTC)"}, "type": "date"},
        yaxis={"title": {"text": "USD"}, "tickprefix": "$", "rangemode": "tozero"},
    )
    return figure.to_dict()


def build_cost_comparison_figure(
    *, current: Decimal, projected: Decimal, target: str
) -> dict[str, Any]:
    """Two bars: what the workload costs a month now, and on the recommended target."""
    figure = Figure(
        bar(
            name="Monthly cost",
            x=["Current", plotly_text(target)],
            y=_floats([current, projected]),
            marker={"color": ["#d1495b", "#2e7d32"]},
            hovertemplate="%{x}: %{y:$,.2f} a month<extra></extra>",
        )
    )
    figure.update_layout(
        **{**BASE_LAYOUT, "hovermode": "closest"},
        title={"text": "Monthly cost: current vs recommended"},
        xaxis={"title": {"text": "Where it runs"}},
        yaxis={"title": {"text": "USD per month"}, "tickprefix": "$", "rangemode": "tozero"},
    )
    return figure.to_dict()


def build_savings_plan_figure(
    *, after: Decimal, shares: Sequence[tuple[str, Decimal]]
) -> dict[str, Any]:
    """One bar of today's monthly spend split into what stays after the plan and each plan
    option's share of the savings (they add up to today's spend)."""
    figure = Figure(
        bar(
            name="After the plan",
            y=["Spend now"],
            x=_floats([after]),
            orientation="h",
            marker={"color": "#8c8c8c"},
            hovertemplate="After the plan: %{x:$,.2f} a month<extra></extra>",
        )
    )
    for label, amount in shares:
        figure.add_trace(
            bar(
                name=plotly_text(label),
                y=["Spend now"],
                x=_floats([amount]),
                orientation="h",
                hovertemplate=f"{plotly_text(label)} saves %{{x:$,.2f}} a month<extra></extra>",
            )
        )
    figure.update_layout(
        **{**BASE_LAYOUT, "hovermode": "closest"},
        barmode="stack",
        height=260,
        title={"text": "Spend now: what stays, and what each option in the plan saves"},
        xaxis={"title": {"text": "USD per month"}, "tickprefix": "$", "rangemode": "tozero"},
        yaxis={"title": {"text": ""}},
    )
    return figure.to_dict()


def build_pool_replicas_figure(
    *, demanded: Sequence[float], before: Sequence[float], after: Sequence[float]
) -> dict[str, Any]:
    """Replicas per hour of week (UTC, mean over the window's weeks): demanded, provisioned
    today and provisioned under the recommendation."""
    hours = [f"{WEEKDAYS[h // 24]} {h % 24:02d}:00" for h in range(len(demanded))]
    figure = Figure()
    for name, values, style in (
        ("Demanded", demanded, {"color": "#1f77b4", "width": 2}),
        ("Provisioned now", before, {"color": "#d1495b", "dash": "dot"}),
        ("Provisioned after", after, {"color": "#2e7d32", "shape": "hv"}),
    ):
        figure.add_trace(
            scatter(
                name=name,
                x=hours,
                y=list(values),
                mode="lines",
                line=style,
                hovertemplate="%{x}: %{y:.2f} replicas<extra>%{fullData.name}</extra>",
            )
        )
    figure.update_layout(
        **BASE_LAYOUT,
        title={"text": "Replicas by hour of week: demanded vs provisioned, before and after"},
        xaxis={"title": {"text": "Hour of week (UTC)"}, "type": "category", "nticks": 14},
        yaxis={"title": {"text": "Replicas"}, "rangemode": "tozero"},
    )
    return figure.to_dict()


CAUSE_COLOURS = {"Volume": "#1f77b4", "Mix": "#ff7f0e", "Price": "#2ca02c"}


def build_anomaly_causes_figure(
    *,
    labels: Sequence[str],
    volume: Sequence[Decimal],
    mix: Sequence[Decimal],
    price: Sequence[Decimal],
) -> dict[str, Any]:
    """Per anomaly (one label each), its change from the expected spend split into volume
    (requests), mix (tokens per request) and price (cost per token), as shares of the change:
    a $3 anomaly reads as clearly as a $3,000 one beside it (the dollars are in the hover and
    the table). Parts that worked against the change go below zero; the parts sum to 100 %."""
    x = plotly_texts(labels)
    change = [v + m + p for v, m, p in zip(volume, mix, price, strict=True)]
    figure = Figure()
    for name, values in (("Volume", volume), ("Mix", mix), ("Price", price)):
        shares = [
            float(part / total * 100) if total else None
            for part, total in zip(values, change, strict=True)
        ]
        figure.add_trace(
            bar(
                name=name,
                x=x,
                y=shares,
                customdata=_floats(list(values)),
                marker={"color": CAUSE_COLOURS[name]},
                hovertemplate="%{y:.0f} %: %{customdata:$,.2f}<extra>%{fullData.name}</extra>",
            )
        )
    figure.update_layout(
        **BASE_LAYOUT,
        barmode="relative",
        title={"text": "What each anomaly's change came from"},
        xaxis={"title": {"text": "Anomaly (day, workload / model)"}, "type": "category"},
        yaxis={"title": {"text": "Share of the change"}, "ticksuffix": " %"},
    )
    return figure.to_dict()
