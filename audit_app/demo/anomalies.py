"""Three spend anomalies planted in the demo's logs, one of each cause, so the Anomalies page
(and the Alerts page) show them on first start.

Its rules in full: `docs/methods.md`, section "The demo's planted anomalies".
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

import pandas as pd

from audit_app.demo.traffic import generate_requests
from audit_app.demo.workloads import WorkloadSpec

CAUSE_VOLUME = "volume"
CAUSE_MIX = "mix"
CAUSE_PRICE = "price"
CAUSES = (CAUSE_VOLUME, CAUSE_MIX, CAUSE_PRICE)
# Days of data a plant needs before it: two same-weekday references for the detector.
REFERENCE_DAYS = 14
LAST_DAYS = 7  # the plants fall among the data's last seven days


@dataclass(frozen=True, kw_only=True)
class AnomalyPlan:
    """One anomaly to plant: `factor` × the requests (volume), the tokens per request (mix) or
    the logged cost per token (price) of `workload` on the `weekday_rank`-th newest weekday
    (Monday to Friday) of the data's last seven days."""

    cause: str
    workload: str
    weekday_rank: int
    factor: float

    def __post_init__(self) -> None:
        if self.cause not in CAUSES:
            raise ValueError(f"cause must be one of {', '.join(CAUSES)}, not {self.cause!r}.")
        if not 1 <= self.weekday_rank <= 5:
            raise ValueError(f"weekday_rank must be 1 to 5, not {self.weekday_rank}.")
        if self.factor <= 1:
            raise ValueError(f"factor must be above 1, not {self.factor}.")


DEMO_ANOMALIES: tuple[AnomalyPlan, ...] = (
    AnomalyPlan(cause=CAUSE_VOLUME, workload="support-chat", weekday_rank=1, factor=5.0),
    AnomalyPlan(cause=CAUSE_MIX, workload="code-assistant", weekday_rank=3, factor=4.0),
    AnomalyPlan(cause=CAUSE_PRICE, workload="helpdesk-bot", weekday_rank=5, factor=3.0),
)

_WHAT = {
    CAUSE_VOLUME: "the requests",
    CAUSE_MIX: "the tokens per request",
    CAUSE_PRICE: "the cost per token",
}


@dataclass(frozen=True, kw_only=True)
class PlantedAnomaly:
    """Where a plan landed: the workload × model × day the detector should find."""

    cause: str
    workload: str
    model: str
    day: date
    factor: float

    def describe(self) -> str:
        return (
            f"{self.cause}: {self.workload} on {self.model} on {self.day} has "
            f"{self.factor:g} x {_WHAT[self.cause]}"
        )


def planted_day(*, first_day: date, last_day: date, weekday_rank: int) -> date | None:
    """The `weekday_rank`-th newest weekday of the last seven days through `last_day`, when it
    has `REFERENCE_DAYS` days of data from `first_day` before it; else None."""
    weekdays = [
        day
        for day in (last_day - timedelta(days=back) for back in range(LAST_DAYS))
        if day.weekday() < 5
    ]
    if weekday_rank > len(weekdays):
        return None
    day = weekdays[weekday_rank - 1]
    return day if day - timedelta(days=REFERENCE_DAYS) >= first_day else None


def plant_anomalies(
    frame: pd.DataFrame,
    *,
    start: datetime,
    days: int,
    workloads: Sequence[WorkloadSpec],
    scale: float,
    seed: int,
    plans: Sequence[AnomalyPlan] = DEMO_ANOMALIES,
) -> tuple[pd.DataFrame, tuple[PlantedAnomaly, ...]]:
    """`frame` (from `generate_requests(start=start, days=days, workloads=workloads,
    scale=scale, seed=seed)`) with the plans planted (module docstring), and where each landed.

    Two plans on one day are refused with a ValueError; a plan whose workload is not in
    `workloads`, or whose day does not fit the data, is left out.
    """
    specs = {spec.name: spec for spec in workloads}
    first_day = start.astimezone(UTC).date()
    last_day = first_day + timedelta(days=days - 1)
    next_row = len(frame)
    planted: list[PlantedAnomaly] = []
    for plan in plans:
        spec = specs.get(plan.workload)
        day = planted_day(first_day=first_day, last_day=last_day, weekday_rank=plan.weekday_rank)
        if spec is None or day is None:
            continue
        if any(p.day == day for p in planted):
            raise ValueError(f"two plans fall on {day}: give each its own weekday_rank.")
        day_start = datetime.combine(day, time.min, tzinfo=UTC)
        on_day = (
            (frame["workload"] == spec.name)
            & (frame["started_at"] >= day_start)
            & (frame["started_at"] < day_start + timedelta(days=1))
        ).to_numpy()
        if plan.cause == CAUSE_PRICE:
            frame = frame.copy()
            frame.loc[on_day, "cost_usd"] = frame.loc[on_day, "cost_usd"] * plan.factor
        else:
            drawn = generate_requests(
                start=day_start,
                days=1,
                workloads=[_drawn_spec(spec, plan)],
                scale=scale * plan.factor if plan.cause == CAUSE_VOLUME else scale,
                seed=zlib.crc32(f"demo-anomaly:{seed}:{plan.cause}".encode()),
                first_row=next_row,
            )
            next_row += len(drawn)
            frame = pd.concat([frame[~on_day], drawn], ignore_index=True)
            frame = frame.sort_values("started_at", kind="stable", ignore_index=True)
        planted.append(
            PlantedAnomaly(
                cause=plan.cause,
                workload=spec.name,
                model=spec.model,
                day=day,
                factor=plan.factor,
            )
        )
    return frame, tuple(planted)


def _drawn_spec(spec: WorkloadSpec, plan: AnomalyPlan) -> WorkloadSpec:
    """The workload as its planted day is drawn: larger prompts and answers for a mix plan."""
    if plan.cause != CAUSE_MIX:
        return spec
    return replace(
        spec,
        mean_input_tokens=spec.mean_input_tokens * plan.factor,
        mean_output_tokens=spec.mean_output_tokens * plan.factor,
    )
