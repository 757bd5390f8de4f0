"""The demo's planted spend anomalies: one of each cause, on the weekdays worked out by hand,
found by the detector with that cause dominant and nothing else in the default window; the
volume one recomputed from the written LiteLLM log by a second method (per-day sums, medians,
and the Shapley split over the six orders enumerated one by one)."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from itertools import permutations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_app.budgets.alerts import alerts_evaluate
from audit_app.budgets.anomaly_service import anomaly_list, anomaly_window
from audit_app.demo.anomalies import (
    DEMO_ANOMALIES,
    AnomalyPlan,
    PlantedAnomaly,
    plant_anomalies,
    planted_day,
)
from audit_app.demo.seed import demo_data_load
from audit_app.demo.traffic import generate_requests
from audit_app.demo.workloads import DEFAULT_WORKLOADS
from audit_app.derived import derived_refresh
from audit_app.models import Alert

# The demo `make run` loads, as tests/audit_app/demo/test_seed.py: today 2026-11-20, so the
# data runs from Wednesday 2026-10-21 to Thursday 2026-11-19. The weekdays of its last seven
# days, newest first: Thu 19, Wed 18, Tue 17, Mon 16, Fri 13.
TODAY = date(2026, 11, 20)
VOLUME = (date(2026, 11, 19), "support-chat", "gpt-4o-2024-08-06")  # newest weekday
MIX = (date(2026, 11, 17), "code-assistant", "claude-sonnet-4-5-20250929")  # third newest
PRICE = (date(2026, 11, 13), "helpdesk-bot", "claude-haiku-4-5-20251001")  # fifth newest
DOMINANT = {VOLUME: "volume", MIX: "mix", PRICE: "price"}
PLANTED_WORKLOADS = [s for s in DEFAULT_WORKLOADS if s.name in {p.workload for p in DEMO_ANOMALIES}]


def test_planted_days_are_weekdays_of_the_last_week_with_two_weeks_before() -> None:
    first, last = date(2026, 10, 21), date(2026, 11, 19)
    days = [planted_day(first_day=first, last_day=last, weekday_rank=r) for r in (1, 3, 5)]
    assert days == [VOLUME[0], MIX[0], PRICE[0]]
    # Twenty days of data (from Oct 31): Nov 13 has one week before it, Nov 17 two.
    short = date(2026, 10, 31)
    assert planted_day(first_day=short, last_day=last, weekday_rank=5) is None
    assert planted_day(first_day=short, last_day=last, weekday_rank=3) == date(2026, 11, 17)
    # Data ending on a Sunday: its newest weekday is the Friday before.
    assert planted_day(first_day=first, last_day=date(2026, 11, 22), weekday_rank=1) == date(
        2026, 11, 20
    )


MONDAY = datetime(2026, 3, 2, tzinfo=UTC)
Frames = tuple[pd.DataFrame, pd.DataFrame, tuple[PlantedAnomaly, ...]]
DAYS = 28  # Monday 2 March to Sunday 29 March: the last week's weekdays are 23 to 27 March


@pytest.fixture(scope="module")
def frames() -> Frames:
    plain = generate_requests(
        start=MONDAY, days=DAYS, workloads=PLANTED_WORKLOADS, scale=0.01, seed=4
    )
    planted, where = plant_anomalies(
        plain, start=MONDAY, days=DAYS, workloads=PLANTED_WORKLOADS, scale=0.01, seed=4
    )
    return plain, planted, where


def _day(frame: pd.DataFrame, workload: str, day: date) -> pd.DataFrame:
    days = frame["started_at"].dt.date
    return frame[(frame["workload"] == workload) & (days == day)]


def test_each_plan_changes_its_own_factor_on_its_day(
    frames: Frames,
) -> None:
    plain, planted, where = frames
    # Friday 27 (newest weekday), Wednesday 25 (third), Monday 23 (fifth).
    volume_day, mix_day, price_day = date(2026, 3, 27), date(2026, 3, 25), date(2026, 3, 23)
    assert [(p.cause, p.workload, p.day) for p in where] == [
        ("volume", "support-chat", volume_day),
        ("mix", "code-assistant", mix_day),
        ("price", "helpdesk-bot", price_day),
    ]

    def usage(workload: str, day: date, frame: pd.DataFrame = planted) -> tuple[int, int, float]:
        rows = _day(frame, workload, day)
        tokens = int(rows["input_tokens"].sum() + rows["output_tokens"].sum())
        return len(rows), tokens, float(rows["cost_usd"].sum())

    # Volume: requests against the same weekday of the three weeks before, size and price kept.
    requests, tokens, cost = usage("support-chat", volume_day)
    before = [usage("support-chat", volume_day - timedelta(weeks=k)) for k in (1, 2, 3)]
    usual = statistics.median(b[0] for b in before)
    assert 4.5 <= requests / usual <= 5.5
    assert tokens / requests == pytest.approx(statistics.median(b[1] / b[0] for b in before), 0.1)
    assert cost / tokens == pytest.approx(statistics.median(b[2] / b[1] for b in before), 0.1)

    # Mix: the usual requests, four times the tokens per request at the usual price per token.
    requests, tokens, cost = usage("code-assistant", mix_day)
    before = [usage("code-assistant", mix_day - timedelta(weeks=k)) for k in (1, 2, 3)]
    assert requests / statistics.median(b[0] for b in before) == pytest.approx(1, abs=0.15)
    usual_size = statistics.median(b[1] / b[0] for b in before)
    assert 3.5 <= (tokens / requests) / usual_size <= 4.5
    assert cost / tokens == pytest.approx(statistics.median(b[2] / b[1] for b in before), 0.1)
    # Longer answers take longer: the day's median latency grows with them.
    assert (
        _day(planted, "code-assistant", mix_day)["latency_ms"].median()
        > 2 * _day(plain, "code-assistant", mix_day)["latency_ms"].median()
    )

    # Price: the very same requests and tokens, each logged cost exactly three times.
    ours, theirs = _day(planted, "helpdesk-bot", price_day), _day(plain, "helpdesk-bot", price_day)
    assert list(ours["request_id"]) == list(theirs["request_id"])
    assert (ours["input_tokens"].to_numpy() == theirs["input_tokens"].to_numpy()).all()
    np.testing.assert_allclose(ours["cost_usd"], theirs["cost_usd"] * 3, rtol=1e-12)


def test_the_rest_of_the_month_is_untouched_and_ids_stay_unique(
    frames: Frames,
) -> None:
    plain, planted, _ = frames
    assert planted["request_id"].is_unique
    assert planted["started_at"].is_monotonic_increasing
    touched = {
        ("support-chat", date(2026, 3, 27)),
        ("code-assistant", date(2026, 3, 25)),
        ("helpdesk-bot", date(2026, 3, 23)),
    }

    def untouched(frame: pd.DataFrame) -> pd.DataFrame:
        keys = zip(frame["workload"], frame["started_at"].dt.date, strict=True)
        keep = [key not in touched for key in keys]
        return frame[keep].sort_values("request_id", ignore_index=True)

    pd.testing.assert_frame_equal(untouched(planted), untouched(plain))
    again, _ = plant_anomalies(
        plain, start=MONDAY, days=DAYS, workloads=PLANTED_WORKLOADS, scale=0.01, seed=4
    )
    pd.testing.assert_frame_equal(again, planted)


def test_plans_that_do_not_fit_are_left_out_and_bad_plans_refused(
    frames: Frames,
) -> None:
    plain = frames[0]
    # Fourteen days: no weekday of the last week has two weeks before it.
    short = plain[plain["started_at"] < MONDAY + timedelta(days=14)]
    kept, where = plant_anomalies(
        short, start=MONDAY, days=14, workloads=PLANTED_WORKLOADS, scale=0.01, seed=4
    )
    assert kept is short and where == ()
    # A workload not loaded (`seed_demo --workloads`) has no plant.
    _, where = plant_anomalies(
        plain, start=MONDAY, days=DAYS, workloads=PLANTED_WORKLOADS[:1], scale=0.01, seed=4
    )
    assert [p.workload for p in where] == ["support-chat"]
    with pytest.raises(ValueError, match="two plans fall on 2026-03-27"):
        plant_anomalies(
            plain,
            start=MONDAY,
            days=DAYS,
            workloads=PLANTED_WORKLOADS,
            scale=1,
            seed=1,
            plans=[
                AnomalyPlan(cause="volume", workload="support-chat", weekday_rank=1, factor=5),
                AnomalyPlan(cause="price", workload="helpdesk-bot", weekday_rank=1, factor=3),
            ],
        )
    with pytest.raises(ValueError, match="cause must be one of volume, mix, price, not 'tier'"):
        AnomalyPlan(cause="tier", workload="support-chat", weekday_rank=1, factor=5)
    with pytest.raises(ValueError, match="weekday_rank must be 1 to 5, not 6"):
        AnomalyPlan(cause="mix", workload="support-chat", weekday_rank=6, factor=5)


# ---------------------------------------------------------------------------------------------
# The seeded demo
# ---------------------------------------------------------------------------------------------


def _log_days(path: Path, model: str) -> dict[date, tuple[int, int, Decimal]]:
    """(requests, input + output tokens, logged spend) a day of one model, from the CSV."""
    requests: dict[date, int] = defaultdict(int)
    tokens: dict[date, int] = defaultdict(int)
    spend: dict[date, Decimal] = defaultdict(Decimal)
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["model"] == model:
                day = date.fromisoformat(row["startTime"][:10])
                requests[day] += 1
                tokens[day] += int(row["prompt_tokens"]) + int(row["completion_tokens"])
                spend[day] += Decimal(row["spend"])
    return {day: (requests[day], tokens[day], spend[day]) for day in requests}


def _shapley_by_orders(
    before: tuple[Fraction, Fraction, Fraction], after: tuple[Fraction, Fraction, Fraction]
) -> list[Fraction]:
    """Each factor's change of the product, averaged over the six orders of changing them."""
    shares = [Fraction(0)] * 3
    for order in permutations(range(3)):
        current = list(before)
        for index in order:
            product_before = current[0] * current[1] * current[2]
            current[index] = after[index]
            shares[index] += current[0] * current[1] * current[2] - product_before
    return [share / 6 for share in shares]


def _median_int(values: list[int]) -> int:
    return int(Decimal(str(statistics.median(values))).to_integral_value(ROUND_HALF_UP))


@pytest.mark.django_db
def test_seeded_demo_shows_exactly_the_three_planted_anomalies(tmp_path: Path) -> None:
    result = demo_data_load(days=30, scale=0.02, directory=tmp_path, today=TODAY)
    derived_refresh()  # as `manage.py seed_demo` does
    assert [(p.day, p.workload, p.model, p.cause) for p in result.anomalies] == [
        (*VOLUME, "volume"),
        (*MIX, "mix"),
        (*PRICE, "price"),
    ]
    window = anomaly_window({})
    assert window == (date(2026, 10, 21), date(2026, 11, 19))
    rows = anomaly_list(*window)
    assert {(r.day, r.workload, r.model) for r in rows} == set(DOMINANT)
    assert len(rows) == 3
    for row in rows:
        parts = {
            "volume": row.cause.volume_usd,
            "mix": row.cause.mix_usd,
            "price": row.cause.price_usd,
        }
        assert sum(parts.values()) == row.change_usd
        dominant = DOMINANT[(row.day, row.workload, row.model)]
        assert parts[dominant] >= Decimal("0.8") * row.change_usd, (row, dominant)

    # The volume day again, from the log written to disk: spend, expected and the split.
    days = _log_days(tmp_path / "demo-litellm-spend-logs.csv", VOLUME[2])
    day = VOLUME[0]
    references = [days[day - timedelta(weeks=k)] for k in (1, 2, 3, 4)]
    actual = days[day]
    expected = (
        _median_int([r[0] for r in references]),
        _median_int([r[1] for r in references]),
        Decimal(str(statistics.median([r[2] for r in references]))),
    )
    row = next(r for r in rows if r.day == day)
    assert abs(row.spend_usd - actual[2]) < Decimal("0.000001")
    assert abs(row.expected_usd - expected[2]) < Decimal("0.000001")
    assert 4.5 <= actual[0] / expected[0] <= 5.5  # about five times the usual requests

    def factors(usage: tuple[int, int, Decimal]) -> tuple[Fraction, Fraction, Fraction]:
        requests, tokens, spend = usage
        return (
            Fraction(requests),
            Fraction(tokens, requests),
            Fraction(spend) / tokens,
        )

    volume, mix, price = _shapley_by_orders(factors(expected), factors(actual))
    cent = Decimal("0.01")
    for mine, theirs in zip(
        (volume, mix, price),
        (row.cause.volume_usd, row.cause.mix_usd, row.cause.price_usd),
        strict=True,
    ):
        assert abs(Decimal(float(mine)) - theirs) <= cent
    assert volume / (volume + mix + price) >= Fraction(95, 100)

    # The alerts of the data's last week: one per planted anomaly (each scores well past 5).
    alerts_evaluate(as_of=window[1])
    keys = set(Alert.objects.filter(kind=Alert.Kind.ANOMALY).values_list("anomaly_key", flat=True))
    assert keys == {f"{d.isoformat()}|{w}|{m}" for d, w, m in DOMINANT}
