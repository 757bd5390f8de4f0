"""Tests for audit_app.costs.costing (docs/methods.md); every expected value is
worked out by hand.

Unless a test says otherwise the deployment is T = 1000 tok/s, G = 8 accelerators,
P = $4/accelerator-hour, so one replica serves T × 3600 = 3,600,000 tokens an hour for
G × P = $32 an hour.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from audit_app.costs.costing import (
    Deployment,
    ScalingMode,
    busy_only_usd_per_million,
    cost_on_profile,
    default_profile,
    monthly_cost,
)

NANO = Decimal("0.000000001")
PER_REPLICA_HOUR = 3_600_000
# Four hours: idle, two replicas' worth, half a replica's worth, idle. R_h = [0, 2, 1, 0].
FOUR_HOURS = [0, 2 * PER_REPLICA_HOUR, PER_REPLICA_HOUR // 2, 0]


def _deployment(**overrides: object) -> Deployment:
    fields: dict[str, object] = {
        "tokens_per_second": 1000.0,
        "accelerators_per_replica": 8,
        "usd_per_accelerator_hour": Decimal("4"),
    }
    fields.update(overrides)
    return Deployment(**fields)  # type: ignore[arg-type]


def _nano(value: Decimal | None) -> Decimal | None:
    return None if value is None else value.quantize(NANO)


# --- busy-only figure and the default profile -------------------------------------------------


def test_busy_only_figure() -> None:
    # 8 × 4 / 3,600,000 × 1e6 = 32 / 3.6 = 8.888…
    assert busy_only_usd_per_million(_deployment()).quantize(NANO) == Decimal("8.888888889")


def test_default_profile_is_one_replica_fully_busy() -> None:
    deployment = _deployment()
    assert default_profile(deployment) == [3_600_000]
    assert default_profile(deployment, hours=3) == [3_600_000] * 3


def test_default_profile_rounds_fractional_demand_down() -> None:
    # 1234.5678 × 3600 = 4,444,444.08 tokens; rounding up would need a second replica.
    assert default_profile(_deployment(tokens_per_second=1234.5678)) == [4_444_444]


@pytest.mark.parametrize("mode", list(ScalingMode))
def test_default_profile_costs_the_busy_only_figure(mode: ScalingMode) -> None:
    deployment = _deployment()
    breakdown = cost_on_profile(
        deployment=deployment, demand_per_hour=default_profile(deployment), mode=mode
    )
    # One replica, fully busy: A = B = 8, $32 for 3.6M tokens.
    assert breakdown.replicas_per_hour == (1,)
    assert breakdown.accelerator_hours == Decimal(8)
    assert breakdown.busy_accelerator_hours == Decimal(8)
    assert breakdown.idle_accelerator_hours == 0
    assert breakdown.utilisation == 1
    assert breakdown.total_cost_usd == Decimal(32)
    assert breakdown.tokens == 3_600_000
    assert breakdown.usd_per_million_tokens == busy_only_usd_per_million(deployment)


def test_default_profile_over_a_day_costs_the_busy_only_figure() -> None:
    deployment = _deployment()
    breakdown = cost_on_profile(
        deployment=deployment,
        demand_per_hour=default_profile(deployment, hours=24),
        mode=ScalingMode.ALWAYS_ON,
    )
    # 24 × $32 = $768 for 24 × 3.6M = 86.4M tokens: 768 / 86.4 = 8.888…
    assert breakdown.total_cost_usd == Decimal(768)
    assert _nano(breakdown.usd_per_million_tokens) == Decimal("8.888888889")


# --- the four-hour profile in each mode ------------------------------------------------------

# C = 360 s, so one cold start is 0.1 replica-hours. Demand = 9M tokens, so
# B = 8 × 9,000,000 / 3,600,000 = 20 accelerator-hours in every mode.
# always-on:     2,2,2,2 = 8 replica-h, no cold start.   A = 8 × 8 = 64;    $256
#                idle 44; $/1M = 256 / 9 = 28.444…;      utilisation 20 / 64 = 0.3125
# autoscale:     1,2,1,1 = 5, one cold start (1→2) 0.1.  A = 8 × 5.1 = 40.8; $163.2
#                idle 20.8; $/1M = 163.2 / 9 = 18.133…;  utilisation 20 / 40.8 = 25/51 = 0.4901…
# scale-to-zero: 0,2,1,0 = 3, two cold starts (0→2) 0.2. A = 8 × 3.2 = 25.6; $102.4
#                idle 5.6; $/1M = 102.4 / 9 = 11.377…;   utilisation 20 / 25.6 = 0.78125
FOUR_HOUR_CASES = [
    (ScalingMode.ALWAYS_ON, (2, 2, 2, 2), 8, "0", "64", "44", "256", "28.444444444", "0.3125"),
    (ScalingMode.AUTOSCALE, (1, 2, 1, 1), 5, "0.1", "40.8", "20.8", "163.2", "18.133333333",
     "0.490196078"),
    (ScalingMode.SCALE_TO_ZERO, (0, 2, 1, 0), 3, "0.2", "25.6", "5.6", "102.4", "11.377777778",
     "0.78125"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "replicas", "replica_hours", "cold", "a", "idle", "cost", "per_million", "util"),
    FOUR_HOUR_CASES,
)
def test_four_hour_profile(
    mode: ScalingMode,
    replicas: tuple[int, ...],
    replica_hours: int,
    cold: str,
    a: str,
    idle: str,
    cost: str,
    per_million: str,
    util: str,
) -> None:
    breakdown = cost_on_profile(
        deployment=_deployment(cold_start_seconds=360.0), demand_per_hour=FOUR_HOURS, mode=mode
    )
    assert breakdown.mode == mode
    assert breakdown.hours == 4
    assert breakdown.replicas_per_hour == replicas
    assert breakdown.provisioned_replica_hours == replica_hours
    assert breakdown.cold_start_replica_hours == Decimal(cold)
    assert breakdown.accelerator_hours == Decimal(a)
    assert breakdown.busy_accelerator_hours == Decimal(20)
    assert breakdown.idle_accelerator_hours == Decimal(idle)
    assert breakdown.compute_cost_usd == Decimal(cost)
    assert breakdown.energy_cost_usd == 0
    assert breakdown.total_cost_usd == Decimal(cost)
    assert breakdown.tokens == 9_000_000
    assert _nano(breakdown.usd_per_million_tokens) == Decimal(per_million)
    assert _nano(breakdown.utilisation) == Decimal(util)


def test_first_hour_has_no_cold_start() -> None:
    # R_h = [2, 0, 1]; scale-to-zero pays only for 0→1 in the third hour: 1 × 0.1 replica-h.
    # A = 8 × (3 + 0.1) = 24.8.
    breakdown = cost_on_profile(
        deployment=_deployment(cold_start_seconds=360.0),
        demand_per_hour=[2 * PER_REPLICA_HOUR, 0, PER_REPLICA_HOUR],
        mode=ScalingMode.SCALE_TO_ZERO,
    )
    assert breakdown.replicas_per_hour == (2, 0, 1)
    assert breakdown.cold_start_replica_hours == Decimal("0.1")
    assert breakdown.accelerator_hours == Decimal("24.8")


def test_replicas_round_up_exactly_at_capacity() -> None:
    # 3,600,000 fits one replica exactly; one token more needs a second; one token needs one.
    breakdown = cost_on_profile(
        deployment=_deployment(),
        demand_per_hour=[PER_REPLICA_HOUR, PER_REPLICA_HOUR + 1, 1],
        mode=ScalingMode.SCALE_TO_ZERO,
    )
    assert breakdown.replicas_per_hour == (1, 2, 1)


def test_mode_given_as_its_string_value() -> None:
    breakdown = cost_on_profile(
        deployment=_deployment(), demand_per_hour=FOUR_HOURS, mode="autoscale"
    )
    assert breakdown.mode is ScalingMode.AUTOSCALE
    assert breakdown.replicas_per_hour == (1, 2, 1, 1)


# --- energy ------------------------------------------------------------------------------------

# W = 700 W, η = 0.6, E = $0.10/kWh: each accelerator-hour draws 0.7 / 0.6 kWh from the grid,
# 0.7 / 0.6 × 0.10 = $0.11666… per accelerator-hour.
ENERGY = {"watts_per_accelerator": 700.0, "usd_per_kwh": Decimal("0.10")}


def test_busy_only_figure_with_energy() -> None:
    # (32 + 8 × 0.11666…) / 3.6 = 32.9333… / 3.6 = 247 / 27 = 9.148148…
    deployment = _deployment(**ENERGY)
    assert busy_only_usd_per_million(deployment).quantize(NANO) == Decimal("9.148148148")
    breakdown = cost_on_profile(
        deployment=deployment,
        demand_per_hour=default_profile(deployment),
        mode=ScalingMode.ALWAYS_ON,
    )
    assert breakdown.usd_per_million_tokens == busy_only_usd_per_million(deployment)


def test_energy_on_the_four_hour_profile() -> None:
    # Autoscale, A = 40.8: energy 40.8 × 700 / 1000 / 0.6 × 0.10 = 2856 / 600 = $4.76;
    # total 163.2 + 4.76 = $167.96; $/1M = 167.96 / 9 = 18.66222…
    breakdown = cost_on_profile(
        deployment=_deployment(cold_start_seconds=360.0, **ENERGY),
        demand_per_hour=FOUR_HOURS,
        mode=ScalingMode.AUTOSCALE,
    )
    assert breakdown.compute_cost_usd == Decimal("163.2")
    assert breakdown.energy_cost_usd == Decimal("4.76")
    assert breakdown.total_cost_usd == Decimal("167.96")
    assert _nano(breakdown.usd_per_million_tokens) == Decimal("18.662222222")


@pytest.mark.parametrize(
    "partial", [{"watts_per_accelerator": 700.0}, {"usd_per_kwh": Decimal("0.10")}]
)
def test_energy_needs_both_power_and_price(partial: dict[str, object]) -> None:
    breakdown = cost_on_profile(
        deployment=_deployment(**partial),
        demand_per_hour=[PER_REPLICA_HOUR],
        mode=ScalingMode.ALWAYS_ON,
    )
    assert breakdown.energy_cost_usd == 0
    assert breakdown.total_cost_usd == Decimal(32)


# --- no demand ---------------------------------------------------------------------------------

# Three idle hours, C = 360 s.
# scale-to-zero and always-on (max R_h = 0): nothing provisioned, $0, no $/1M.
# autoscale keeps one replica: 3 replica-h, A = 24, B = 0, idle 24, 24 × 4 = $96, utilisation 0.
ZERO_CASES = [
    (ScalingMode.SCALE_TO_ZERO, (0, 0, 0), "0", "0", None),
    (ScalingMode.ALWAYS_ON, (0, 0, 0), "0", "0", None),
    (ScalingMode.AUTOSCALE, (1, 1, 1), "24", "96", Decimal(0)),
]


@pytest.mark.parametrize(("mode", "replicas", "a", "cost", "util"), ZERO_CASES)
def test_zero_demand(
    mode: ScalingMode, replicas: tuple[int, ...], a: str, cost: str, util: Decimal | None
) -> None:
    breakdown = cost_on_profile(
        deployment=_deployment(cold_start_seconds=360.0), demand_per_hour=[0, 0, 0], mode=mode
    )
    assert breakdown.replicas_per_hour == replicas
    assert breakdown.cold_start_replica_hours == 0
    assert breakdown.accelerator_hours == Decimal(a)
    assert breakdown.busy_accelerator_hours == 0
    assert breakdown.idle_accelerator_hours == Decimal(a)
    assert breakdown.total_cost_usd == Decimal(cost)
    assert breakdown.tokens == 0
    assert breakdown.usd_per_million_tokens is None
    assert breakdown.utilisation == util


# --- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tokens_per_second", 0.0),
        ("tokens_per_second", -5.0),
        ("tokens_per_second", float("inf")),
        ("accelerators_per_replica", 0),
        ("usd_per_accelerator_hour", Decimal("-0.01")),
        ("cold_start_seconds", -1.0),
        ("watts_per_accelerator", -1.0),
        ("usd_per_kwh", Decimal("-0.10")),
        ("grid_to_compute_efficiency", 0.0),
        ("grid_to_compute_efficiency", 1.5),
    ],
)
def test_invalid_deployment_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        _deployment(**{field: value})


def test_free_hardware_and_full_efficiency_are_valid() -> None:
    deployment = _deployment(usd_per_accelerator_hour=Decimal(0), grid_to_compute_efficiency=1.0)
    assert busy_only_usd_per_million(deployment) == 0


@pytest.mark.parametrize("demand", [[], [10, -1], [1.5], [True]])
def test_invalid_demand_names_the_field(demand: list[object]) -> None:
    with pytest.raises(ValueError, match="demand_per_hour"):
        cost_on_profile(
            deployment=_deployment(),
            demand_per_hour=demand,  # type: ignore[arg-type]
            mode=ScalingMode.ALWAYS_ON,
        )


def test_invalid_hours() -> None:
    with pytest.raises(ValueError, match="hours"):
        default_profile(_deployment(), hours=0)
    with pytest.raises(ValueError, match="hours_in_month"):
        monthly_cost(
            deployment=_deployment(),
            demand_per_hour=[1],
            mode=ScalingMode.ALWAYS_ON,
            hours_in_month=0,
        )


# --- monthly cost ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("demand", "mode", "hours_in_month", "expected"),
    [
        # Four-hour autoscale profile: $163.2 / 4 h = $40.8/h; × 730 = $29,784.
        (FOUR_HOURS, ScalingMode.AUTOSCALE, 730, "29784"),
        # Same profile over a 30-day month: 40.8 × 720 = $29,376.
        (FOUR_HOURS, ScalingMode.AUTOSCALE, 720, "29376"),
        # One replica fully busy: $32/h × 730 = $23,360.
        ([PER_REPLICA_HOUR], ScalingMode.ALWAYS_ON, 730, "23360"),
        # Nothing demanded, scale-to-zero: $0.
        ([0, 0], ScalingMode.SCALE_TO_ZERO, 730, "0"),
    ],
)
def test_monthly_cost(
    demand: list[int], mode: ScalingMode, hours_in_month: int, expected: str
) -> None:
    cost = monthly_cost(
        deployment=_deployment(cold_start_seconds=360.0),
        demand_per_hour=demand,
        mode=mode,
        hours_in_month=hours_in_month,
    )
    assert cost == Decimal(expected)


def test_monthly_cost_defaults_to_730_hours() -> None:
    cost = monthly_cost(
        deployment=_deployment(), demand_per_hour=[PER_REPLICA_HOUR], mode=ScalingMode.ALWAYS_ON
    )
    assert cost == Decimal(23360)


def test_scaling_modes_are_one_spelling_with_their_labels() -> None:
    assert [(mode.value, mode.label) for mode in ScalingMode] == [
        ("always_on", "always on"),
        ("autoscale", "autoscale"),
        ("scale_to_zero", "scale to zero"),
    ]
