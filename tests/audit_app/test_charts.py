"""Chart builders: trace count, names and axis titles."""

from __future__ import annotations

from datetime import date

from audit_app.charts import build_uploads_per_day_figure


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
