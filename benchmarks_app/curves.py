"""A benchmark run as a curve: its load points, how two curves' points are matched, and each
side's operating point under a latency SLO.

Pure module (no Django).

Its rules in full: `docs/methods.md`, section "Benchmark curves and operating points".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks_app.artifacts import BenchmarkArtifact
from benchmarks_app.metrics import RunFields, RunMetrics

UNLIMITED = "unlimited"


@dataclass(frozen=True, kw_only=True)
class Load:
    """A point's load: client concurrency and / or request rate (None = unlimited)."""

    concurrency: int | None = None
    request_rate: float | None = None

    def key(self) -> tuple[int | None, float | None]:
        rate = None if self.request_rate is None else round(self.request_rate, 6)
        return (self.concurrency, rate)

    def as_json(self) -> dict[str, Any]:
        """`{"concurrency": 64}`, `{"request_rate": 4.0}`, both, or
        `{"request_rate": "unlimited"}` (the verdict JSON's `load`)."""
        out: dict[str, Any] = {}
        if self.concurrency is not None:
            out["concurrency"] = self.concurrency
        if self.request_rate is not None:
            out["request_rate"] = self.request_rate
        elif self.concurrency is None:
            out["request_rate"] = UNLIMITED
        return out

    def text(self) -> str:
        parts = []
        if self.concurrency is not None:
            parts.append(f"concurrency {self.concurrency}")
        if self.request_rate is not None:
            parts.append(f"{self.request_rate:g} req/s")
        return " at ".join(parts) or "an unlimited request rate"


def load_from_json(data: Mapping[str, Any] | None) -> Load | None:
    if not data:
        return None
    rate = data.get("request_rate")
    return Load(
        concurrency=data.get("concurrency"),
        request_rate=None if rate in (None, UNLIMITED) else float(rate),
    )


def load_text(load: Mapping[str, Any] | None, label: str = "", index: int = 0) -> str:
    """Where a stored point sits on its curve: its load ("concurrency 4"), else its label, else
    its place ("point 3")."""
    parsed = load_from_json(load)
    if parsed is not None:
        return parsed.text()
    return label or f"point {index + 1}"


@dataclass(frozen=True, kw_only=True)
class CurvePoint:
    """One measured point of a run."""

    index: int  # position in the run, from 0
    label: str
    load: Load | None  # None: the file recorded no load
    input_len: int | None = None
    output_len: int | None = None
    dataset: str = ""
    source: str = ""  # the file it came from
    metrics: RunMetrics

    def where(self) -> str:
        """ "concurrency 64", "concurrency 64, input 1024 / output 128", or the label."""
        base = self.load.text() if self.load is not None else (self.label or f"point {self.index}")
        lengths = []
        if self.input_len is not None:
            lengths.append(f"input {self.input_len:,}")
        if self.output_len is not None:
            lengths.append(f"output {self.output_len:,}")
        return f"{base}, {' / '.join(lengths)}" if lengths else base

    def describe(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "label": self.label,
            "load": None if self.load is None else self.load.as_json(),
            "input_len": self.input_len,
            "output_len": self.output_len,
        }


class CurveError(ValueError):
    """Points that cannot make one curve; the message names the files / points."""


def _length(artifact: BenchmarkArtifact, fields: RunFields, name: str) -> int | None:
    raw = artifact.metadata.get(name)
    if raw not in (None, ""):
        try:
            number = float(str(raw))
        except ValueError:
            number = math.nan
        if math.isfinite(number) and number.is_integer() and number >= 1:
            return int(number)
    value = getattr(fields, name)
    return value if isinstance(value, int) else None


def point_load(artifact: BenchmarkArtifact, fields: RunFields, *, single: bool) -> Load | None:
    """The load of one point; a single-point run's load is its run fields' (meta may state it)."""
    if single:
        return Load(concurrency=fields.concurrency, request_rate=fields.request_rate)
    if not artifact.load_known:
        return None
    return Load(concurrency=artifact.max_concurrency, request_rate=artifact.request_rate)


def point_from(
    artifact: BenchmarkArtifact,
    fields: RunFields,
    metrics: RunMetrics,
    *,
    index: int,
    single: bool,
    source: str = "",
) -> CurvePoint:
    load = point_load(artifact, fields, single=single)
    return CurvePoint(
        index=index,
        label=artifact.label or (load.text() if load is not None else f"point {index + 1}"),
        load=load,
        input_len=_length(artifact, fields, "input_len"),
        output_len=_length(artifact, fields, "output_len"),
        dataset=str(artifact.metadata.get("dataset") or fields.dataset or ""),
        source=source,
        metrics=metrics,
    )


def check_duplicates(points: Sequence[CurvePoint]) -> None:
    """CurveError naming both points when two share a load and lengths."""
    seen: dict[tuple[Any, ...], CurvePoint] = {}
    for point in points:
        if point.load is None:
            continue
        key = (point.load.key(), point.input_len, point.output_len, point.dataset.casefold())
        first = seen.get(key)
        if first is not None:
            raise CurveError(
                f"duplicate point at {point.where()}: {_named(first)} and {_named(point)} "
                "measure the same load; import one of them"
            )
        seen[key] = point


def _named(point: CurvePoint) -> str:
    source = f" of {point.source}" if point.source else ""
    return f"point {point.index + 1} ({point.label}){source}"


@dataclass(frozen=True, kw_only=True)
class PointPair:
    baseline: CurvePoint
    candidate: CurvePoint
    # Lengths stated on one side only: (field label, side that states it).
    half_stated: tuple[tuple[str, str], ...] = ()

    def where(self) -> str:
        return self.candidate.where() if self.candidate.load else self.baseline.where()


@dataclass(frozen=True, kw_only=True)
class Matching:
    pairs: tuple[PointPair, ...]
    unmatched: tuple[tuple[str, CurvePoint], ...]  # (side, point)
    single: bool  # both runs have one point: compared whatever their loads


_LENGTHS = (("input_len", "input length"), ("output_len", "output length"))


def match_points(baseline: Sequence[CurvePoint], candidate: Sequence[CurvePoint]) -> Matching:
    """Pair the two curves' points (see the module docstring)."""
    if len(baseline) == 1 and len(candidate) == 1:
        return Matching(
            pairs=(PointPair(baseline=baseline[0], candidate=candidate[0]),),
            unmatched=(),
            single=True,
        )
    pairs: list[PointPair] = []
    used: set[int] = set()
    unmatched: list[tuple[str, CurvePoint]] = []
    for base in baseline:
        partner = None
        if base.load is not None:
            partner = next(
                (
                    cand
                    for cand in candidate
                    if cand.index not in used
                    and cand.load is not None
                    and cand.load.key() == base.load.key()
                    and _lengths_agree(base, cand)
                ),
                None,
            )
        if partner is None:
            unmatched.append(("baseline", base))
            continue
        used.add(partner.index)
        pairs.append(
            PointPair(baseline=base, candidate=partner, half_stated=_half_stated(base, partner))
        )
    unmatched.extend(("candidate", cand) for cand in candidate if cand.index not in used)
    return Matching(pairs=tuple(pairs), unmatched=tuple(unmatched), single=False)


def _lengths_agree(base: CurvePoint, cand: CurvePoint) -> bool:
    for name, _ in _LENGTHS:
        a, b = getattr(base, name), getattr(cand, name)
        if a is not None and b is not None and a != b:
            return False
    return not (
        base.dataset and cand.dataset and base.dataset.casefold() != cand.dataset.casefold()
    )


def _half_stated(base: CurvePoint, cand: CurvePoint) -> tuple[tuple[str, str], ...]:
    out = []
    for name, label in _LENGTHS:
        a, b = getattr(base, name), getattr(cand, name)
        if (a is None) != (b is None):
            out.append((label, "baseline" if a is not None else "candidate"))
    return tuple(out)


# --- SLO and operating point ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Slo:
    """Latency limits the operating point must meet (None = no limit on that percentile)."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None

    def __post_init__(self) -> None:
        for name in ("ttft_ms", "tpot_ms"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"slo {name} must be a number of milliseconds above 0")

    @property
    def given(self) -> bool:
        return self.ttft_ms is not None or self.tpot_ms is not None

    def met_by(self, metrics: RunMetrics) -> bool:
        for limit, value in (
            (self.ttft_ms, metrics.ttft_p95_ms),
            (self.tpot_ms, metrics.tpot_p95_ms),
        ):
            if limit is not None and (value is None or value > limit):
                return False
        return True

    def text(self) -> str:
        parts = []
        if self.ttft_ms is not None:
            parts.append(f"p95 TTFT ≤ {self.ttft_ms:g} ms")
        if self.tpot_ms is not None:
            parts.append(f"p95 TPOT ≤ {self.tpot_ms:g} ms")
        return " and ".join(parts)


NO_SLO = Slo()


def operating_point(points: Sequence[CurvePoint], slo: Slo = NO_SLO) -> CurvePoint | None:
    """The highest-throughput measured point meeting the SLO; None when none does (a single
    eligible point without a decode tok/s is still chosen)."""
    eligible = [p for p in points if slo.met_by(p.metrics)]
    measured = [p for p in eligible if p.metrics.decode_tokens_per_s is not None]
    if measured:
        return max(measured, key=lambda p: (p.metrics.decode_tokens_per_s or 0.0, -p.index))
    # No throughput to rank by: a lone eligible point is still the operating point.
    return eligible[0] if len(eligible) == 1 else None
