"""Data for gates run for a recommendation: two runs of Llama 3.1 70B on H100s (the candidate
faster, so the gate passes once utilisation is stated), and a recommendation whose workload's
November traffic used a given model."""

from __future__ import annotations

import io
import json
import statistics
from pathlib import Path

from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import Recommendation, RecommendationEvent, Workload
from benchmarks_app.models import BenchmarkRun
from benchmarks_app.services import benchmark_run_import

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
BASELINE = FIXTURES / "vllm_baseline.json"
CANDIDATE = FIXTURES / "vllm_candidate.json"
RUNS_MODEL = "meta-llama/Llama-3.1-70B-Instruct"  # both files' model_id; gpu_type H100
OTHER_MODEL = "mistralai/Mistral-Large-Instruct-2411"
H100_TARGET = "p5.48xlarge (NVIDIA H100 80GB), scale to zero"
STATUSES = ("proposed", "pilot_approved", "rejected", "verified", "gate_failed")


def import_runs(
    *, baseline_meta: dict[str, str] | None = None, candidate_meta: dict[str, str] | None = None
) -> tuple[BenchmarkRun, BenchmarkRun]:
    """The baseline and candidate runs, utilisation stated so that the verdict is pass."""
    runs = []
    for path, meta in ((BASELINE, baseline_meta), (CANDIDATE, candidate_meta)):
        with path.open("rb") as source:
            runs.append(
                benchmark_run_import(
                    source=source,
                    filename=path.name,
                    meta={"gpu_utilization_pct": "80", **(meta or {})},
                )
            )
    return runs[0], runs[1]


def workload_traffic(*, workload: str, model: str, day: str = "2026-11-10") -> None:
    """One request of ``model`` for ``workload`` on ``day``, through the real ingest."""
    log = (
        "started_at,ended_at,workload,provider,model,input_tokens,output_tokens\n"
        f"{day}T01:10:00Z,{day}T01:10:05Z,{workload},together_ai,{model},100,700\n"
    ).encode()
    upload = upload_create(source=io.BytesIO(log), original_name=f"{workload}.csv", enqueue=False)
    upload_ingest(upload_id=upload.pk)


def recommendation(
    *,
    status: str = "pilot_approved",
    workload_model: str | None = RUNS_MODEL,
    target_kind: str = "dedicated_hardware",
    target: str = H100_TARGET,
) -> Recommendation:
    """A recommendation for workload ``evals`` over November 2026, in ``status``, whose
    traffic used ``workload_model`` (None: no traffic)."""
    if workload_model is not None:
        workload_traffic(workload="evals", model=workload_model)
    made = Recommendation.objects.create(
        workload=Workload.objects.get_or_create(name="evals")[0],
        target_kind=target_kind,
        target=target,
        current_monthly_usd=1000,
        projected_monthly_usd=400,
        savings_monthly_usd=600,
        confidence="Low until a benchmark gate measures this model on this hardware.",
        period_start="2026-11-01",
        period_end="2026-11-30",
        status=status,
    )
    made.refresh_from_db()  # dates as dates, as every other reader sees them
    return made


def events(recommendation: Recommendation) -> list[tuple[str, str]]:
    return list(
        RecommendationEvent.objects.filter(recommendation=recommendation).values_list(
            "from_status", "to_status"
        )
    )


def _percentile(values: list[float], q: int) -> float:
    # The "inclusive" method interpolates between the sorted values as numpy's default does.
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def metrics_by_hand(path: Path, *, utilisation_pct: float = 80.0) -> dict[str, float]:
    """A vLLM result file's metrics computed from its raw arrays, apart from the converter:
    seconds to ms, TPOT = (e2e − TTFT) / (output tokens − 1), decode tok/s = output tokens /
    duration, 8 GPUs (the file's num_gpus)."""
    raw = json.loads(path.read_text())
    ttft = [seconds * 1000 for seconds in raw["ttfts"]]
    e2e = [seconds * 1000 for seconds in raw["latencies"]]
    tpot = [(e - t) / (n - 1) for t, e, n in zip(ttft, e2e, raw["output_lens"], strict=True)]
    itl = [seconds * 1000 for request in raw["itls"] for seconds in request]
    decode = raw["total_output_tokens"] / raw["duration"]
    return {
        "ttft_p50_ms": statistics.median(ttft),
        "ttft_p95_ms": _percentile(ttft, 95),
        "tpot_p50_ms": statistics.median(tpot),
        "tpot_p95_ms": _percentile(tpot, 95),
        "itl_p95_ms": _percentile(itl, 95),
        "e2e_p95_ms": _percentile(e2e, 95),
        "decode_tokens_per_s": decode,
        "per_user_decode_tokens_per_s": 1000 / statistics.median(tpot),
        "output_tokens_per_gpu_hour": decode * 3600 / 8,
        "gpu_utilization_pct": utilisation_pct,
    }
