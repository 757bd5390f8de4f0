"""Chart builders: trace count, names and axis titles."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from audit_app.reporting import charts
from audit_app.reporting.charts import build_uploads_per_day_figure


def test_uploads_per_day_figure() -> None:
    days = [date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)]
    figure = build_uploads_per_day_figure(
        days=days, counts_by_kind={"Token / request log": [1, 0, 2], "Billing export": [0, 1, 0]}
    )
    assert [trace["name"] for trace in figure["data"]] == ["Token / request log", "Billing export"]
    assert [trace["type"] for trace in figure["data"]] == ["bar", "bar"]
    assert figure["data"][0]["x"] == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert figure["data"][0]["y"] == [1, 0, 2]
    assert figure["layout"]["barmode"] == "stack"
    assert figure["layout"]["xaxis"]["title"]["text"] == "Day (UTC)"
    assert figure["layout"]["yaxis"]["title"]["text"] == "Uploads"


def test_spend_per_day_figure() -> None:
    from decimal import Decimal

    from audit_app.reporting.charts import build_spend_per_day_figure

    figure = build_spend_per_day_figure(
        days=[date(2026, 11, 1), date(2026, 11, 2)],
        series={"openai": [Decimal("1.5"), Decimal("0")], "anthropic": [Decimal("2"), None]},
        dimension_label="provider",
    )
    assert [t["name"] for t in figure["data"]] == ["openai", "anthropic"]
    assert figure["data"][0]["y"] == [1.5, 0.0]
    assert figure["data"][1]["y"] == [2.0, None]
    assert figure["layout"]["title"]["text"] == "Spend per day by provider"
    assert figure["layout"]["yaxis"]["title"]["text"] == "Spend (USD)"
    # Idle GPU cost stacks on top, in grey, only when there is some.
    with_idle = build_spend_per_day_figure(
        days=[date(2026, 11, 1), date(2026, 11, 2)],
        series={"vllm": [Decimal("4"), Decimal("1")]},
        dimension_label="provider",
        idle=[Decimal("0"), Decimal("2.25")],
    )
    assert [t["name"] for t in with_idle["data"]] == ["vllm", "Idle GPU"]
    assert with_idle["data"][1]["y"] == [0.0, 2.25]
    assert with_idle["data"][1]["marker"]["color"] == "#b0b7c3"


def test_top_workloads_figure_puts_the_largest_on_top() -> None:
    from decimal import Decimal

    from audit_app.reporting.charts import build_top_workloads_figure

    figure = build_top_workloads_figure(names=["big", "small"], spend=[Decimal("9"), Decimal("1")])
    trace = figure["data"][0]
    assert trace["orientation"] == "h"
    assert trace["y"] == ["small", "big"]  # plotly draws the last category on top
    assert trace["x"] == [1.0, 9.0]
    assert figure["layout"]["xaxis"]["title"]["text"] == "Spend (USD, log scale)"


def test_top_workloads_figure_has_a_log_axis_with_a_tick_per_decade() -> None:
    from decimal import Decimal

    from audit_app.reporting.charts import build_top_workloads_figure

    # $85.9k beside $12.34 and $0.05: on a linear axis the small bars are invisible.
    spend = [Decimal("85900"), Decimal("12.34"), Decimal("0.05")]
    figure = build_top_workloads_figure(names=["a", "b", "c"], spend=spend)
    xaxis = figure["layout"]["xaxis"]
    assert xaxis["type"] == "log"
    assert xaxis["tickvals"] == [10.0**p for p in range(-2, 6)]  # $0.01 .. $100k
    assert xaxis["ticktext"] == ["$0.01", "$0.1", "$1", "$10", "$100", "$1k", "$10k", "$100k"]
    assert figure["data"][0]["x"] == [0.05, 12.34, 85900.0]


def test_latency_figure_draws_each_measure_in_its_own_panel() -> None:
    from audit_app.reporting.charts import build_latency_figure

    figure = build_latency_figure(
        percentiles={
            "TTFT": [300.0, 320.0, 350.0],
            "TPOT": [20.0, 22.0, 25.0],
            "End-to-end": [40_000.0, 41_000.0, 42_000.0],
        }
    )
    by_name = {t["name"]: t for t in figure["data"]}
    assert [t["name"] for t in figure["data"]] == ["TTFT", "TPOT", "End-to-end"]
    assert "yaxis" not in by_name["TTFT"]
    assert (by_name["TPOT"]["xaxis"], by_name["TPOT"]["yaxis"]) == ("x2", "y2")
    assert (by_name["End-to-end"]["xaxis"], by_name["End-to-end"]["yaxis"]) == ("x3", "y3")
    assert by_name["TPOT"]["y"] == [20.0, 22.0, 25.0]
    layout = figure["layout"]
    domains = [layout[f"xaxis{s}"]["domain"] for s in ("", "2", "3")]
    assert domains[0][0] == 0.0 and domains[2][1] == 1.0
    # side by side, in order, none overlapping
    assert domains[0][1] < domains[1][0] and domains[1][1] < domains[2][0]
    assert [layout[f"yaxis{s}"]["title"]["text"] for s in ("", "2", "3")] == [
        "TTFT (ms)",
        "TPOT (ms)",
        "End-to-end (ms)",
    ]
    assert (layout["xaxis3"]["anchor"], layout["yaxis3"]["anchor"]) == ("y3", "x3")
    assert all(layout[f"yaxis{s}"]["rangemode"] == "tozero" for s in ("", "2", "3"))


def test_daily_usage_figure_has_spend_bars_and_token_lines() -> None:
    from decimal import Decimal

    from audit_app.reporting.charts import build_daily_usage_figure

    figure = build_daily_usage_figure(
        days=[date(2026, 11, 1)],
        api_spend=[Decimal("3")],
        gpu_cost=[Decimal("0")],
        input_tokens=[10],
        output_tokens=[5],
    )
    assert [(t["name"], t["type"]) for t in figure["data"]] == [
        ("API spend (USD)", "bar"),
        ("Input tokens", "scatter"),
        ("Output tokens", "scatter"),
    ]
    assert figure["data"][1]["yaxis"] == "y2"
    assert figure["layout"]["yaxis2"]["title"]["text"] == "Tokens"
    # A GPU share stacks on the API spend.
    with_gpu = build_daily_usage_figure(
        days=[date(2026, 11, 1)],
        api_spend=[Decimal("3")],
        gpu_cost=[Decimal("7.5")],
        input_tokens=[10],
        output_tokens=[5],
    )
    assert [t["name"] for t in with_gpu["data"][:2]] == ["API spend (USD)", "GPU share (USD)"]
    assert with_gpu["data"][1]["y"] == [7.5]
    assert with_gpu["layout"]["barmode"] == "stack"


def test_hour_of_week_and_latency_figures() -> None:
    from audit_app.reporting.charts import build_hour_of_week_figure, build_latency_figure

    matrix = [[0] * 24 for _ in range(7)]
    matrix[0][9] = 5
    heat = build_hour_of_week_figure(matrix=matrix)
    assert heat["data"][0]["type"] == "heatmap"
    assert heat["data"][0]["y"] == ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    assert heat["data"][0]["z"][0][9] == 5
    assert heat["layout"]["xaxis"]["title"]["text"] == "Hour of day (UTC)"

    latency = build_latency_figure(
        percentiles={"TTFT": [100.0, 200.0, 300.0], "TPOT": [None, None, None]}
    )
    assert [t["name"] for t in latency["data"]] == ["TTFT", "TPOT"]
    assert latency["data"][0]["x"] == ["p50", "p95", "p99"]
    assert latency["layout"]["yaxis"]["title"]["text"] == "TTFT (ms)"


# --- Empty figures and axes that never go negative -------------------------------------------
def test_is_empty_when_no_trace_holds_a_point() -> None:
    from decimal import Decimal

    import numpy as np
    import plotly.graph_objects as go

    from audit_app.reporting.charts import (
        build_latency_figure,
        build_reconciliation_figure,
        build_spend_per_day_figure,
        figure_to_dict,
        is_empty,
    )

    days = [date(2026, 11, 1), date(2026, 11, 2)]
    # A window with no spend: no series at all (the date axis that drew "Jan 2000").
    assert is_empty(build_spend_per_day_figure(days=days, series={}, dimension_label="provider"))
    # Days but no amount on any of them.
    assert is_empty(build_reconciliation_figure(days=days, billed=[None, None], estimated=[None]))
    assert is_empty(build_latency_figure(percentiles={"TTFT": [None] * 3, "TPOT": [None] * 3}))
    assert is_empty(None)
    assert is_empty({"data": [], "layout": {}})
    # Zero is a value: bars of zeros are drawn.
    assert not is_empty(
        build_spend_per_day_figure(
            days=days, series={"openai": [Decimal(0), Decimal(0)]}, dimension_label="provider"
        )
    )
    # One point is enough, in any trace.
    assert not is_empty(
        build_latency_figure(percentiles={"TTFT": [None, 180.0, None], "TPOT": [None] * 3})
    )
    # Numpy arrays (encoded by plotly as typed arrays), NaN as no value, heatmaps by z.
    nan_only = figure_to_dict(go.Figure(go.Scatter(x=np.array([1.0, 2.0]), y=np.full(2, np.nan))))
    assert is_empty(nan_only)
    one_point = figure_to_dict(go.Figure(go.Scatter(x=np.array([1.0, 2.0]), y=[np.nan, 3.0])))
    assert not is_empty(one_point)
    assert not is_empty(figure_to_dict(go.Figure(go.Heatmap(z=np.zeros((7, 24))))))
    assert is_empty(figure_to_dict(go.Figure(go.Heatmap(z=[[None, None], [None, None]]))))
    assert is_empty(figure_to_dict(go.Figure(go.Histogram(x=[]))))
    assert not is_empty(figure_to_dict(go.Figure(go.Histogram(x=[12.5]))))


def test_money_and_count_axes_start_at_zero() -> None:
    from decimal import Decimal

    from audit_app.reporting import charts

    days = [date(2026, 11, 1)]
    figures = {
        "uploads": charts.build_uploads_per_day_figure(days=days, counts_by_kind={"x": [0]}),
        "spend": charts.build_spend_per_day_figure(
            days=days, series={"a": [Decimal(0)]}, dimension_label="team"
        ),
        "usage": charts.build_daily_usage_figure(
            days=days,
            api_spend=[Decimal(0)],
            gpu_cost=[Decimal(0)],
            input_tokens=[0],
            output_tokens=[0],
        ),
        "latency": charts.build_latency_figure(percentiles={"TTFT": [0.0, 0.0, 0.0]}),
        "pools": charts.build_pool_attribution_figure(
            pools=["gpu"], by_workload={"chat": [Decimal(0)]}, idle=[Decimal(0)]
        ),
        "reconciliation": charts.build_reconciliation_figure(
            days=days, billed=[Decimal(0)], estimated=[Decimal(0)]
        ),
        "cost": charts.build_cost_comparison_figure(
            current=Decimal(0), projected=Decimal(0), target="batch"
        ),
    }
    for name, figure in figures.items():
        assert figure["layout"]["yaxis"]["rangemode"] == "tozero", name
    # Top workloads is a log axis: zero is not on it (see the log-axis test).
    assert figures["usage"]["layout"]["yaxis2"]["rangemode"] == "tozero"


# A workload name that plotly.js would draw as a live link, and how every figure must carry it:
# plotly turns the entities back into characters and shows them as text.
LINK = '<a href="https://evil.example/phish">CLICK-ME</a>'
LINK_ESCAPED = "&lt;a href=&#34;https://evil.example/phish&#34;&gt;CLICK-ME&lt;/a&gt;"


def test_plotly_text_escapes_markup_and_quotes() -> None:
    from audit_app.reporting.charts import plotly_text

    assert plotly_text(LINK) == LINK_ESCAPED
    assert plotly_text("R&D's <b>") == "R&amp;D&#39;s &lt;b&gt;"
    assert plotly_text("&lt;") == "&amp;lt;"  # shown as the five characters it is
    assert plotly_text("chat") == "chat"


def test_every_label_from_data_reaches_the_figure_escaped() -> None:
    from decimal import Decimal

    from audit_app.reporting.charts import (
        build_cost_comparison_figure,
        build_latency_figure,
        build_pool_attribution_figure,
        build_spend_per_day_figure,
        build_top_workloads_figure,
    )

    day = [date(2026, 11, 2)]
    uploads = build_uploads_per_day_figure(days=day, counts_by_kind={LINK: [1]})
    assert [t["name"] for t in uploads["data"]] == [LINK_ESCAPED]

    spend = build_spend_per_day_figure(
        days=day,
        series={LINK: [Decimal(1)]},
        dimension_label="<i>x</i>",
        idle=[Decimal(2)],
        idle_label="<b>idle</b>",
    )
    assert [t["name"] for t in spend["data"]] == [LINK_ESCAPED, "&lt;b&gt;idle&lt;/b&gt;"]
    assert spend["layout"]["title"]["text"] == "Spend per day by &lt;i&gt;x&lt;/i&gt;"

    top = build_top_workloads_figure(names=[LINK, "chat"], spend=[Decimal(2), Decimal(1)])
    assert top["data"][0]["y"] == ["chat", LINK_ESCAPED]  # categories are tick labels

    latency = build_latency_figure(percentiles={LINK: [1.0, 2.0, 3.0]})
    assert [t["name"] for t in latency["data"]] == [LINK_ESCAPED]

    pools = build_pool_attribution_figure(
        pools=["<b>gpu</b>"], by_workload={LINK: [Decimal(1)]}, idle=[Decimal(1)]
    )
    assert [t["name"] for t in pools["data"]] == [LINK_ESCAPED, "Idle"]
    assert pools["data"][0]["x"] == pools["data"][1]["x"] == ["&lt;b&gt;gpu&lt;/b&gt;"]

    cost = build_cost_comparison_figure(current=Decimal(2), projected=Decimal(1), target=LINK)
    assert cost["data"][0]["x"] == ["Current", LINK_ESCAPED]


def test_pool_replicas_figure_has_three_series_over_the_week() -> None:
    from audit_app.reporting.charts import build_pool_replicas_figure

    figure = build_pool_replicas_figure(
        demanded=[0.25] * 168, before=[2.0] * 168, after=[1.0] * 168
    )
    assert [t["name"] for t in figure["data"]] == [
        "Demanded",
        "Provisioned now",
        "Provisioned after",
    ]
    assert figure["layout"]["xaxis"]["title"]["text"] == "Hour of week (UTC)"
    assert figure["layout"]["yaxis"]["title"]["text"] == "Replicas"
    assert figure["data"][0]["x"][0] == "Mon 00:00" and figure["data"][0]["x"][167] == "Sun 23:00"
    assert figure["layout"]["yaxis"]["rangemode"] == "tozero"


def test_savings_plan_figure_stacks_what_stays_and_each_share() -> None:
    figure = charts.build_savings_plan_figure(
        after=Decimal("63203.33"),
        shares=[("sales-copilot: hardware", Decimal("80793.48")), ("tagger", Decimal("20.87"))],
    )
    assert [t["name"] for t in figure["data"]] == [
        "After the plan",
        "sales-copilot: hardware",
        "tagger",
    ]
    assert [t["x"] for t in figure["data"]] == [[63203.33], [80793.48], [20.87]]
    assert figure["layout"]["barmode"] == "stack"
    assert figure["layout"]["xaxis"]["title"]["text"] == "USD per month"
