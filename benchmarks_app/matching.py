"""What a gate must match to verify a recommendation: one pure rule (no Django).

Its rules in full: `docs/methods.md`, section "What a gate must match to verify a
recommendation".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

APPROVED = "pilot_approved"
GATEABLE_KIND = "dedicated_hardware"
# A pool consolidation moves workloads onto another pool's hardware: a gate verifies it the same
# way (its models are the pool's, its target names the host pool's replica).
GATEABLE_KINDS = (GATEABLE_KIND, "pool_consolidate")
_VENDORS = frozenset({"nvidia", "amd", "intel", "google", "aws", "tesla"})
_WORD = re.compile(r"[a-z0-9]+")
_PARENTHESISED = re.compile(r"\(([^()]*)\)")


@dataclass(frozen=True, kw_only=True)
class RecommendationTerms:
    """What a gate is asked to verify: the recommendation, and the models its workload's
    traffic used from ``period_start`` to ``period_end``."""

    id: int
    status: str
    target_kind: str
    target: str
    workload: str
    period_start: date
    period_end: date
    workload_models: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class GateRuns:
    baseline_model: str
    candidate_model: str
    candidate_gpu_type: str


@dataclass(frozen=True, kw_only=True)
class Mismatch:
    """One reason a gate may not verify a recommendation: the field (``status``,
    ``target_kind``, ``baseline.model``, ``candidate.model``, ``candidate.gpu_type``), the
    values that would match (any of them), the value given, and a sentence saying so."""

    field: str
    expected: tuple[str, ...]
    actual: str
    sentence: str


def model_key(name: str) -> str:
    """``meta-llama/Llama-3.1-70B-Instruct`` and ``openai/llama-3.1-70b-instruct`` ->
    ``llama-3.1-70b-instruct``."""
    return name.strip().lower().rsplit("/", 1)[-1].strip()


def target_hardware(target: str) -> str:
    """``p5.48xlarge (NVIDIA H100 80GB), scale to zero`` -> ``NVIDIA H100 80GB``."""
    parts = _PARENTHESISED.findall(target)
    return (parts[-1] if parts else target).strip()


def accelerator_words(text: str) -> frozenset[str]:
    """``NVIDIA H100 80GB`` -> {``h100``, ``80gb``}: lower-cased words, vendor names dropped."""
    return frozenset(_WORD.findall(text.lower())) - _VENDORS


def accelerator_matches(*, gpu_type: str, hardware: str) -> bool:
    words = accelerator_words(gpu_type)
    return bool(words) and words <= accelerator_words(hardware)


def link_mismatches(*, recommendation: RecommendationTerms, runs: GateRuns) -> tuple[Mismatch, ...]:
    """Why a gate over ``runs`` may not verify ``recommendation``; empty when it may.

    A recommendation that is not approved, or not for dedicated hardware, is refused on that
    alone; otherwise every run that does not match is named.
    """
    rec = recommendation
    if rec.status != APPROVED:
        return (
            Mismatch(
                field="status",
                expected=(APPROVED,),
                actual=rec.status,
                sentence=f"Recommendation {rec.id} is {rec.status}, not {APPROVED}: a gate "
                "verifies only a recommendation a manager approved for a pilot.",
            ),
        )
    if rec.target_kind not in GATEABLE_KINDS:
        return (
            Mismatch(
                field="target_kind",
                expected=GATEABLE_KINDS,
                actual=rec.target_kind,
                sentence=f"Recommendation {rec.id} targets {rec.target_kind} ({rec.target}): a "
                "benchmark run records neither the API tier nor the provider it measured, so a "
                f"gate verifies only {' and '.join(GATEABLE_KINDS)} recommendations.",
            ),
        )
    return tuple(
        m
        for m in (
            _baseline_model(runs),
            _candidate_model(rec, runs),
            _candidate_hardware(rec, runs),
        )
        if m is not None
    )


def _baseline_model(runs: GateRuns) -> Mismatch | None:
    if model_key(runs.baseline_model) == model_key(runs.candidate_model):
        return None
    return Mismatch(
        field="baseline.model",
        expected=(runs.candidate_model,),
        actual=runs.baseline_model,
        sentence=f"The baseline run's model {runs.baseline_model!r} is not the candidate's "
        f"{runs.candidate_model!r}.",
    )


def _candidate_model(rec: RecommendationTerms, runs: GateRuns) -> Mismatch | None:
    models = tuple(sorted(set(rec.workload_models)))
    if model_key(runs.candidate_model) in {model_key(m) for m in models}:
        return None
    period = f"{rec.period_start} to {rec.period_end}"
    if not models:
        used = f"workload {rec.workload!r} has no traffic from {period} to compare with"
    else:
        used = f"workload {rec.workload!r} used {', '.join(map(repr, models))} from {period}"
    return Mismatch(
        field="candidate.model",
        expected=models,
        actual=runs.candidate_model,
        sentence=f"The candidate run's model {runs.candidate_model!r} is not the workload's: "
        f"{used}.",
    )


def _candidate_hardware(rec: RecommendationTerms, runs: GateRuns) -> Mismatch | None:
    hardware = target_hardware(rec.target)
    if accelerator_matches(gpu_type=runs.candidate_gpu_type, hardware=hardware):
        return None
    given = (
        f"gpu_type {runs.candidate_gpu_type!r} is not"
        if runs.candidate_gpu_type.strip()
        else "gpu_type is not stated; it must be"
    )
    return Mismatch(
        field="candidate.gpu_type",
        expected=(hardware,),
        actual=runs.candidate_gpu_type,
        sentence=f"The candidate run's {given} the recommendation's hardware {hardware!r}.",
    )
