"""Benchmark chart builders: trace count, names, axis titles, and axes that never go negative
(the gate's cost chart drew a "$−1" tick when both sides cost nothing)."""

from __future__ import annotations

from decimal import Decimal

from audit_app.reporting.charts import is_empty
from benchmarks_app.charts import (
    build_cost_by_mode_figure,
    build_latency_distribution_figure,
    build_pareto_figure,
    build_run_curve_figure,
    build_telemetry_figure,
    build_throughput_timeline_figure,
)


def test_cost_by_mode_figure() -> None:
    figure = build_cost_by_mode_figure(
        cost_by_mode={
            "always_on": {"baseline": Decimal("0.8"), "candidate": Decimal("0.6")},
            "autoscale": {"baseline": "0.5", "candidate": None},
        }
    )
    assert [t["name"] for t in figure["data"]] == ["Baseline", "Candidate"]
    assert figure["data"][0]["x"] == ["always on", "autoscale", "scale to zero"]
    assert figure["data"][0]["y"] == [0.8, 0.5, None]
    assert figure["data"][1]["y"] == [0.6, None, None]
    assert figure["layout"]["yaxis"]["title"]["text"] == "USD per 1M tokens"
    assert figure["layout"]["yaxis"]["tickprefix"] == "$"
    assert figure["layout"]["yaxis"]["rangemode"] == "tozero"
    assert not is_empty(figure)


def test_cost_by_mode_without_costs_is_empty() -> None:
    # A gate between hosted APIs or runs without $/accelerator-hour has no cost to chart.
    assert is_empty(build_cost_by_mode_figure(cost_by_mode={}))
    zero = {"always_on": {"baseline": Decimal(0), "candidate": Decimal(0)}}
    assert not is_empty(build_cost_by_mode_figure(cost_by_mode=zero))


def test_run_figures() -> None:
    distribution = build_latency_distribution_figure(ttft_ms=[120.0, 130.0], tpot_ms=[])
    assert [t["name"] for t in distribution["data"]] == ["TTFT (ms)", "TPOT (ms)"]
    assert distribution["layout"]["xaxis"]["title"]["text"] == "TTFT (ms)"
    # TPOT has its own panel and axis: tens of ms next to TTFT's hundreds.
    assert (distribution["data"][1]["xaxis"], distribution["data"][1]["yaxis"]) == ("x2", "y2")
    assert distribution["layout"]["xaxis2"]["title"]["text"] == "TPOT (ms)"
    assert (
        distribution["layout"]["xaxis"]["domain"][1] < distribution["layout"]["xaxis2"]["domain"][0]
    )
    assert distribution["layout"]["yaxis"]["rangemode"] == "tozero"
    assert not is_empty(distribution)
    assert is_empty(build_latency_distribution_figure(ttft_ms=[], tpot_ms=[]))

    timeline = build_throughput_timeline_figure(seconds=[0, 1], tokens_per_s=[10.0, 12.0])
    assert [t["name"] for t in timeline["data"]] == ["Output tokens/s"]
    assert timeline["layout"]["yaxis"]["title"]["text"] == "Tokens/s"
    assert timeline["layout"]["xaxis"]["rangemode"] == "nonnegative"

    telemetry = build_telemetry_figure(seconds=[0, 1], utilization=[None, None], power=[None, 300])
    assert [t["name"] for t in telemetry["data"]] == ["GPU utilization (%)", "Power (W)"]
    assert telemetry["layout"]["yaxis2"]["title"]["text"] == "Watts"
    assert not is_empty(telemetry)
    assert is_empty(build_telemetry_figure(seconds=[0], utilization=[None], power=[None]))


def _row(
    label: str, tpot_ms: float, per_gpu: float | None, per_dollar: float | None, **more: object
) -> dict[str, object]:
    """A point of a gate's recorded `curves`: interactivity = 1000 / p95 TPOT."""
    return {
        "label": label,
        "tpot_p95_ms": tpot_ms,
        "interactivity": 1000 / tpot_ms,
        "per_accelerator": per_gpu,
        "tokens_per_dollar": per_dollar,
        "operating": False,
        **more,
    }


SELF_HOSTED = {"baseline": "self-hosted", "candidate": "self-hosted"}


def test_pareto_draws_one_line_per_side_in_order_of_interactivity() -> None:
    curves = {
        # Recorded in load order: 16 (slow per user) before 4; the chart orders them by x.
        "baseline": [_row("c16", 40, 1000.0, 1.2e6), _row("c4", 20, 505.0, 0.6e6, operating=True)],
        "candidate": [
            _row("c4", 20, 500.0, 0.6e6),
            _row("c16", 30, 1200.0, 1.7e6, operating=True),
            _row("no TPOT", 1e9, None, None),  # no throughput per accelerator: left out
        ],
    }
    figure = build_pareto_figure(curves=curves, slo=None, serving=SELF_HOSTED)
    baseline, candidate, stars = figure["data"]
    assert (baseline["name"], baseline["mode"]) == ("Baseline", "lines+markers")
    assert (baseline["x"], baseline["y"], baseline["text"]) == (
        [25.0, 50.0],  # 1000 / 40, 1000 / 20
        [1000.0, 505.0],
        ["c16", "c4"],
    )
    assert candidate["x"] == [1000 / 30, 50.0]
    assert candidate["y"] == [1200.0, 500.0]
    # The operating points: one legend entry, bigger star markers.
    assert stars["name"] == "operating point"
    assert (stars["x"], stars["y"]) == ([50.0, 1000 / 30], [505.0, 1200.0])
    assert stars["marker"]["symbol"] == "star"
    assert stars["marker"]["size"] > 6  # plotly's default marker size
    assert stars["text"] == ["Baseline operating point: c4", "Candidate operating point: c16"]
    assert figure["layout"]["xaxis"]["title"]["text"] == (
        "Interactivity: tok/s per user (1000 / p95 TPOT)"
    )
    assert figure["layout"]["yaxis"]["title"]["text"] == "Output tok/s per accelerator"
    assert figure["layout"]["title"]["text"] == (
        "Throughput per accelerator vs interactivity (Pareto)"
    )
    assert "shapes" not in figure["layout"] and "annotations" not in figure["layout"]
    assert not is_empty(figure)


def test_the_slo_is_a_vertical_line_at_1000_over_its_p95_tpot() -> None:
    curves = {"baseline": [_row("c4", 20, 505.0, None)], "candidate": [_row("c4", 25, 480.0, None)]}
    figure = build_pareto_figure(
        curves=curves, slo={"ttft_ms": 500.0, "tpot_ms": 40.0}, serving=SELF_HOSTED
    )
    [line] = figure["layout"]["shapes"]
    assert (line["type"], line["x0"], line["x1"]) == ("line", 25.0, 25.0)  # 1000 / 40 ms
    assert (line["yref"], line["y0"], line["y1"]) == ("paper", 0, 1)
    [label] = figure["layout"]["annotations"]
    assert (label["text"], label["x"]) == ("SLO p95 TPOT ≤ 40 ms", 25.0)
    # A TTFT limit alone has no place on this chart's axes.
    ttft_only = build_pareto_figure(curves=curves, slo={"ttft_ms": 500.0}, serving=SELF_HOSTED)
    assert "shapes" not in ttft_only["layout"]
    assert len(ttft_only["data"]) == 2  # no operating point recorded: no star trace


def test_with_a_hosted_side_the_pareto_plots_tokens_per_dollar() -> None:
    curves = {
        "baseline": [_row("c4", 20, 505.0, 727_272.7)],
        "candidate": [_row("c4", 20, None, 250_000.0)],  # a hosted API: no accelerators
    }
    figure = build_pareto_figure(
        curves=curves, slo=None, serving={"baseline": "self-hosted", "candidate": "hosted"}
    )
    assert figure["layout"]["yaxis"]["title"]["text"] == "Output tokens per dollar"
    assert figure["layout"]["title"]["text"] == (
        "Tokens per dollar vs interactivity (Pareto; a side is a hosted API)"
    )
    assert [trace["y"] for trace in figure["data"]] == [[727_272.7], [250_000.0]]


def test_a_pareto_without_points_is_empty() -> None:
    assert is_empty(build_pareto_figure(curves={}, slo=None, serving={}))
    no_gpus = {"baseline": [_row("c4", 20, None, None)]}
    assert is_empty(build_pareto_figure(curves=no_gpus, slo={"tpot_ms": 40}, serving=SELF_HOSTED))


def test_pareto_labels_are_escaped() -> None:
    curves = {"baseline": [_row('<a href="x">c4</a>', 20, 505.0, None, operating=True)]}
    figure = build_pareto_figure(curves=curves, slo=None, serving=SELF_HOSTED)
    assert figure["data"][0]["text"] == ["&lt;a href=&#34;x&#34;&gt;c4&lt;/a&gt;"]
    assert figure["data"][2]["text"] == [
        "Baseline operating point: &lt;a href=&#34;x&#34;&gt;c4&lt;/a&gt;"
    ]


def test_run_curve_figure() -> None:
    figure = build_run_curve_figure(
        points=[
            {"label": "c16", "tpot_p95_ms": 40.0, "decode_tokens_per_s": 4000.0},
            {"label": "c4", "tpot_p95_ms": 20.0, "decode_tokens_per_s": Decimal("2020")},
            {"label": "no TPOT", "tpot_p95_ms": None, "decode_tokens_per_s": 100.0},
        ]
    )
    [trace] = figure["data"]
    assert (trace["x"], trace["y"], trace["text"]) == (
        [20.0, 40.0],
        [2020.0, 4000.0],
        ["c4", "c16"],
    )
    assert figure["layout"]["xaxis"]["title"]["text"] == "p95 TPOT (ms)"
    assert figure["layout"]["yaxis"]["title"]["text"] == "Decode tok/s"
    assert is_empty(build_run_curve_figure(points=[]))
