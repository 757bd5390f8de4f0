"""Benchmark chart builders: trace count, names, axis titles, and axes that never go negative
(the gate's cost chart drew a "$−1" tick when both sides cost nothing)."""

from __future__ import annotations

from decimal import Decimal

from audit_app.reporting.charts import is_empty
from benchmarks_app.charts import (
    build_cost_by_mode_figure,
    build_cost_vs_tpot_figure,
    build_latency_distribution_figure,
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


def test_cost_vs_tpot_figure() -> None:
    figure = build_cost_vs_tpot_figure(
        points=[{"label": "run 1", "tpot_p95_ms": 21.5, "usd_per_million": Decimal("0.75")}]
    )
    [trace] = figure["data"]
    assert (trace["name"], trace["x"], trace["y"], trace["text"]) == (
        "Runs",
        [21.5],
        [0.75],
        ["run 1"],
    )
    assert figure["layout"]["xaxis"]["title"]["text"] == "p95 TPOT (ms)"
    assert figure["layout"]["yaxis"]["title"]["text"] == "USD per 1M output tokens"
    assert figure["layout"]["xaxis"]["rangemode"] == "nonnegative"
    assert figure["layout"]["yaxis"]["rangemode"] == "nonnegative"
    assert is_empty(build_cost_vs_tpot_figure(points=[]))


def test_run_figures() -> None:
    distribution = build_latency_distribution_figure(ttft_ms=[120.0, 130.0], tpot_ms=[])
    assert [t["name"] for t in distribution["data"]] == ["TTFT (ms)", "TPOT (ms)"]
    assert distribution["layout"]["xaxis"]["title"]["text"] == "Milliseconds"
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


def test_cost_vs_tpot_labels_are_escaped() -> None:
    figure = build_cost_vs_tpot_figure(
        points=[{"tpot_p95_ms": 20, "usd_per_million": "1.5", "label": '<a href="x">run</a>'}]
    )
    assert figure["data"][0]["text"] == ["&lt;a href=&#34;x&#34;&gt;run&lt;/a&gt;"]
