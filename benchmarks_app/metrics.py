"""A benchmark run's fields and metrics (latency, throughput and efficiency as
`docs/methods.md` defines them). One concern: what one measured point of a run gives, from its
artifact and the run's stated fields.

Pure module (numpy, no Django).

Its rules in full: `docs/methods.md`, section "A benchmark run's fields and metrics".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from benchmarks_app.artifacts import BenchmarkArtifact, PerRequest, TelemetrySample
from benchmarks_app.hints import meta_flag

SECONDS_PER_HOUR = 3600

SOURCE_PER_REQUEST = "per-request arrays"
SOURCE_TELEMETRY = "telemetry"
SOURCE_STATED = "stated"

# Human names, shared with the gate's sentences.
METRIC_LABELS: Mapping[str, str] = {
    "ttft_p50_ms": "p50 TTFT",
    "ttft_p95_ms": "p95 TTFT",
    "tpot_p50_ms": "p50 TPOT",
    "tpot_p95_ms": "p95 TPOT",
    "itl_p95_ms": "p95 ITL",
    "e2e_p95_ms": "p95 end-to-end latency",
    "decode_tokens_per_s": "decode tok/s",
    "per_user_decode_tokens_per_s": "per-user decode tok/s",
    "output_tokens_per_gpu_hour": "output tokens per GPU-hour",
    "gpu_utilization_pct": "GPU utilization",
    "tokens_per_joule": "tokens per joule",
    "power_w_per_gpu": "mean power per GPU",
    "error_rate_pct": "error rate",
}

# Metrics of the accelerators themselves: *not applicable* on a hosted API (never *missing*).
ACCELERATOR_METRICS = (
    "output_tokens_per_gpu_hour",
    "gpu_utilization_pct",
    "tokens_per_joule",
    "power_w_per_gpu",
)
SERVING_HOSTED = "hosted"
SERVING_SELF_HOSTED = "self-hosted"

TELEMETRY_HOW = (
    "attach accelerator telemetry for the run "
    "(nvidia-smi CSV, DCGM exporter text or neuron-monitor JSON)"
)


@dataclass(frozen=True, kw_only=True)
class RunFields:
    """What no tool records about a run. Empty string / None = not stated."""

    model: str
    model_hash: str = ""
    quantization: str = ""
    batch_size: int | None = None  # server max batch size
    num_gpus: int | None = None  # accelerators in one replica
    gpu_type: str = ""
    usd_per_gpu_hour: Decimal | None = None
    gpu_utilization_pct: float | None = None  # stated, used when there is no telemetry
    watts_per_gpu: float | None = None  # stated, used when telemetry has no power
    usd_per_kwh: Decimal | None = None
    dataset: str = ""
    input_len: int | None = None
    output_len: int | None = None
    request_rate: float | None = None  # requests/s asked for; None = unlimited
    concurrency: int | None = None  # client max concurrency
    # A hosted API side (`serving=hosted`, or a `provider` without `serving=self-hosted`):
    # priced per token, from these two or the provider's price card for the model.
    serving: str = ""
    provider: str = ""
    usd_per_million_input: Decimal | None = None
    usd_per_million_output: Decimal | None = None
    # The name both sides are matched on when providers spell the model differently.
    canonical_model: str = ""

    @property
    def hosted(self) -> bool:
        if self.serving:
            return self.serving == SERVING_HOSTED
        return bool(self.provider)

    @property
    def compared_model(self) -> str:
        return self.canonical_model or self.model


@dataclass(frozen=True, kw_only=True)
class RunMetrics:
    """The metrics of one run (`docs/methods.md`); None = cannot be computed (see `missing`).

    `sources`: metric → where its value came from. `missing`: metric → "<label>: how to supply it".
    """

    ttft_p50_ms: float | None = None
    ttft_p95_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p95_ms: float | None = None
    itl_p95_ms: float | None = None
    e2e_p95_ms: float | None = None
    decode_tokens_per_s: float | None = None
    per_user_decode_tokens_per_s: float | None = None
    output_tokens_per_gpu_hour: float | None = None
    gpu_utilization_pct: float | None = None
    tokens_per_joule: float | None = None
    # Not compared by the gate; feeds the energy term of the cost model.
    power_w_per_gpu: float | None = None
    # failed / (completed + failed) in percent; None when the file says nothing of failures.
    error_rate_pct: float | None = None
    # Facts of the run the gate prices a hosted side with (token mix) and the page shows.
    completed_requests: int | None = None
    failed_requests: int | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    missing: Mapping[str, str] = field(default_factory=dict)
    not_applicable: tuple[str, ...] = ()  # ACCELERATOR_METRICS on a hosted API


@dataclass(frozen=True, kw_only=True)
class Timeline:
    """Output tokens per second of the run, one value per bucket starting at `bucket_start_s`."""

    bucket_s: float
    bucket_start_s: tuple[float, ...]
    output_tokens_per_s: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class Distribution:
    """Summary of one latency array for the run page (p99 is for display, never for the gate)."""

    count: int
    mean: float
    minimum: float
    p50: float
    p95: float
    p99: float
    maximum: float


# --- run fields -----------------------------------------------------------------------------


def _parse_int(key: str, value: str) -> int:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number.is_integer() and number >= 1):
        raise ValueError(f"{key} must be a whole number of at least 1, got {value!r}")
    return int(number)


def _parse_float(key: str, value: str, *, upper: float = math.inf) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and 0 <= number <= upper):
        bounds = f"between 0 and {upper:g}" if math.isfinite(upper) else "at least 0"
        raise ValueError(f"{key} must be a number {bounds}, got {value!r}")
    return number


def _parse_decimal(key: str, value: str) -> Decimal:
    try:
        number = Decimal(value.removeprefix("$").replace(",", ""))
    except InvalidOperation:
        number = Decimal("NaN")
    if not (number.is_finite() and number >= 0):
        raise ValueError(f"{key} must be an amount of at least 0, got {value!r}")
    return number


def _parse_request_rate(key: str, value: str) -> float | None:
    # vLLM writes "inf" for an unlimited rate; RunFields says unlimited with None.
    if value.lower() in ("inf", "infinity", "unlimited"):
        return None
    rate = _parse_float(key, value)
    if rate == 0:
        raise ValueError(f"{key} must be more than 0 (or inf for unlimited), got {value!r}")
    return rate


def _parse_serving(key: str, value: str) -> str:
    serving = value.strip().lower().replace("_", "-")
    if serving == "selfhosted":
        serving = SERVING_SELF_HOSTED
    if serving not in (SERVING_HOSTED, SERVING_SELF_HOSTED):
        raise ValueError(f"{key} must be hosted or self-hosted, got {value!r}")
    return serving


_PARSERS: Mapping[str, Callable[[str, str], Any]] = {
    "serving": _parse_serving,
    "usd_per_million_input": _parse_decimal,
    "usd_per_million_output": _parse_decimal,
    "batch_size": _parse_int,
    "num_gpus": _parse_int,
    "usd_per_gpu_hour": _parse_decimal,
    "gpu_utilization_pct": lambda key, value: _parse_float(key, value, upper=100),
    "watts_per_gpu": _parse_float,
    "usd_per_kwh": _parse_decimal,
    "input_len": _parse_int,
    "output_len": _parse_int,
    "request_rate": _parse_request_rate,
    "concurrency": _parse_int,
}
RUN_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(RunFields))
_FIELD_NAMES = frozenset(RUN_FIELD_NAMES)


def run_fields_from(artifact: BenchmarkArtifact, overrides: Mapping[str, str]) -> RunFields:
    """The run's fields: what the artifact carries (its model, request rate and concurrency,
    then its metadata), with `overrides` (form or `--meta`) winning.

    Keys that are not RunFields (container_image, driver, operator, …) are left to the caller.
    An empty value clears the field. A number that does not parse raises ValueError naming the
    key and the value.
    """
    raw: dict[str, str] = {"model": artifact.model}
    if artifact.request_rate is not None:
        raw["request_rate"] = str(artifact.request_rate)
    if artifact.max_concurrency is not None:
        raw["concurrency"] = str(artifact.max_concurrency)
    for source in (artifact.metadata, overrides):
        raw.update({key: str(value).strip() for key, value in source.items()})

    return _fields_from_raw(raw)


def run_fields_with(fields: RunFields, changes: Mapping[str, str]) -> RunFields:
    """`fields` with `changes` (KEY → value; an empty value clears the field) applied, parsed
    as `run_fields_from` parses them. Unknown keys raise ValueError naming them."""
    unknown = sorted(set(changes) - _FIELD_NAMES)
    if unknown:
        raise ValueError(
            f"{unknown[0]} is not a run field; known: {', '.join(sorted(_FIELD_NAMES))}"
        )
    raw: dict[str, str] = {}
    for f in dataclasses.fields(fields):
        value = getattr(fields, f.name)
        if value is None or value == "":
            continue
        raw[f.name] = str(value)
    raw.update({key: str(value).strip() for key, value in changes.items()})
    return _fields_from_raw(raw)


def _fields_from_raw(raw: Mapping[str, str]) -> RunFields:
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in _FIELD_NAMES or not value:
            continue
        parse = _PARSERS.get(key)
        values[key] = parse(key, value) if parse else value
    values.setdefault("model", "")
    return RunFields(**values)


# --- metrics --------------------------------------------------------------------------------


def _percentile(values: Sequence[float], q: float) -> float:
    # numpy's default "linear" method: position (n − 1) × q / 100 between the sorted values.
    return float(np.percentile(np.asarray(values, dtype=float), q))


def _check_aligned(per_request: PerRequest) -> None:
    aligned = {
        "ttft_ms": len(per_request.ttft_ms),
        "latency_ms": len(per_request.latency_ms),
        "output_tokens": len(per_request.output_tokens),
        "input_tokens": len(per_request.input_tokens),
        "start_s": len(per_request.start_s),
    }
    lengths = {length for length in aligned.values() if length}
    if len(lengths) > 1:
        raise ValueError(f"per-request arrays are not aligned: lengths {aligned}")


def tpot_per_request(per_request: PerRequest) -> list[float]:
    """(e2e − TTFT) / (output tokens − 1) for each request with more than one output token."""
    return [
        (latency - ttft) / (tokens - 1)
        for ttft, latency, tokens in zip(
            per_request.ttft_ms, per_request.latency_ms, per_request.output_tokens, strict=False
        )
        if tokens > 1
    ]


def _latency_how(label: str, q: int, name: str, reported: Mapping[str, float]) -> str:
    how = (
        f"{label}: save the vLLM result with --metric-percentiles {q} or with per-request "
        "arrays (--save-detailed); for other tools, keep their per-request records"
    )
    if name.replace(f"_p{q}_", "_p99_") in reported:
        how += f" (the file's p99 is never used as a p{q})"
    return how


def compute_metrics(
    artifact: BenchmarkArtifact,
    fields: RunFields,
    *,
    run_window_s: tuple[float, float] | None = None,
) -> RunMetrics:
    """The metrics of one run (`docs/methods.md`).

    `run_window_s` (epoch seconds, start and end) keeps only the telemetry samples taken during
    the run; without it every attached sample is taken as the run's (the artifact itself carries
    no wall-clock start).
    """
    per_request = artifact.per_request or PerRequest()
    _check_aligned(per_request)
    found = _Found()
    _put_latencies(found, per_request, artifact.reported)
    decode_how = _put_decode(found, artifact, per_request)
    _put_rates(found, fields, decode_how)
    samples = [
        sample
        for sample in artifact.telemetry
        if run_window_s is None or run_window_s[0] <= sample.timestamp_s <= run_window_s[1]
    ]
    if (
        artifact.started_at_s is not None
        and artifact.ended_at_s is not None
        and run_window_s is None
    ):
        samples = [
            sample
            for sample in samples
            if artifact.started_at_s <= sample.timestamp_s <= artifact.ended_at_s
        ]
    _put_telemetry(found, samples, fields, decode_how)
    not_applicable: tuple[str, ...] = ()
    if fields.hosted:
        not_applicable = ACCELERATOR_METRICS
        for name in ACCELERATOR_METRICS:
            found.values[name] = None
            found.sources.pop(name, None)
            found.missing.pop(name, None)
    values: dict[str, Any] = dict(found.values)
    return RunMetrics(
        **values,
        **_request_facts(artifact, per_request),
        sources=found.sources,
        missing=found.missing,
        not_applicable=not_applicable,
    )


def _request_facts(artifact: BenchmarkArtifact, per_request: PerRequest) -> dict[str, Any]:
    """Requests completed and failed, the error rate, and the token totals of the run."""
    completed = artifact.completed_requests
    if completed is None and per_request.latency_ms:
        completed = len(per_request.latency_ms)
    failed = artifact.failed_requests
    error_rate = None
    if failed is not None and completed is not None and completed + failed > 0:
        error_rate = failed / (completed + failed) * 100
    input_tokens = artifact.total_input_tokens
    if input_tokens is None and per_request.input_tokens:
        input_tokens = sum(per_request.input_tokens)
    output_tokens = artifact.total_output_tokens
    if output_tokens is None and per_request.output_tokens:
        output_tokens = sum(per_request.output_tokens)
    return {
        "error_rate_pct": error_rate,
        "completed_requests": completed,
        "failed_requests": failed,
        "total_input_tokens": input_tokens,
        "total_output_tokens": output_tokens,
    }


@dataclass
class _Found:
    """The metrics worked out so far: each value with where it came from, or why it is missing."""

    values: dict[str, float | None] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def put(self, name: str, value: float | None, source: str, how: str) -> None:
        self.values[name] = value
        if value is None:
            self.missing[name] = how
        else:
            self.sources[name] = source


def _put_latencies(found: _Found, per_request: PerRequest, reported: Mapping[str, float]) -> None:
    """Latency percentiles: per-request arrays first, then the file's own figure of the same
    percentile (never another one)."""
    latency_arrays: Mapping[str, Sequence[float]] = {
        "ttft": per_request.ttft_ms,
        "tpot": tpot_per_request(per_request),
        "itl": per_request.itl_ms,
        "e2e": per_request.latency_ms,
    }
    for name, q in (
        ("ttft_p50_ms", 50),
        ("ttft_p95_ms", 95),
        ("tpot_p50_ms", 50),
        ("tpot_p95_ms", 95),
        ("itl_p95_ms", 95),
        ("e2e_p95_ms", 95),
    ):
        array = latency_arrays[name.split("_")[0]]
        how = _latency_how(METRIC_LABELS[name], q, name, reported)
        if array:
            found.put(name, _percentile(array, q), SOURCE_PER_REQUEST, how)
        elif name in reported:
            found.put(name, float(reported[name]), f"file's own p{q}", how)
        else:
            found.put(name, None, "", how)


def _put_decode(found: _Found, artifact: BenchmarkArtifact, per_request: PerRequest) -> str:
    """Decode tok/s: total output tokens over the benchmark's duration. Returns why it would be
    missing, for the metrics derived from it."""
    total_output = artifact.total_output_tokens
    if total_output is None and per_request.output_tokens:
        total_output = sum(per_request.output_tokens)
    decode_how = (
        f"{METRIC_LABELS['decode_tokens_per_s']}: the file records neither total output tokens "
        "with a duration nor an output tok/s; export the tool's full result"
    )
    if total_output is not None and artifact.duration_s:
        found.put(
            "decode_tokens_per_s",
            total_output / artifact.duration_s,
            "output tokens / duration",
            "",
        )
    elif "output_tokens_per_s" in artifact.reported:
        found.put(
            "decode_tokens_per_s",
            float(artifact.reported["output_tokens_per_s"]),
            "file's output tok/s",
            "",
        )
    else:
        found.put("decode_tokens_per_s", None, "", decode_how)
    return decode_how


def _put_rates(found: _Found, fields: RunFields, decode_how: str) -> None:
    """Per-user decode tok/s (from the median TPOT) and output tokens per GPU-hour."""
    median_tpot = found.values["tpot_p50_ms"]
    per_user_label = METRIC_LABELS["per_user_decode_tokens_per_s"]
    tpot_missing = found.missing.get("tpot_p50_ms", "it is 0")
    found.put(
        "per_user_decode_tokens_per_s",
        1000 / median_tpot if median_tpot else None,
        "1000 / median TPOT",
        f"{per_user_label}: needs a median TPOT above 0 ({tpot_missing})",
    )
    decode = found.values["decode_tokens_per_s"]
    per_gpu_label = METRIC_LABELS["output_tokens_per_gpu_hour"]
    if decode is None:
        per_gpu_how = f"{per_gpu_label}: needs decode tok/s ({decode_how})"
    else:
        per_gpu_how = f"{per_gpu_label}: state the accelerator count ({meta_flag('num_gpus', '8')})"
    found.put(
        "output_tokens_per_gpu_hour",
        decode * SECONDS_PER_HOUR / fields.num_gpus
        if decode is not None and fields.num_gpus
        else None,
        "decode tok/s × 3600 / accelerators",
        per_gpu_how,
    )


def _put_telemetry(
    found: _Found, samples: Sequence[TelemetrySample], fields: RunFields, decode_how: str
) -> None:
    """GPU utilization, power per GPU and tokens per joule: from the run's telemetry samples,
    else the stated fields."""
    utilization = [s.utilization_pct for s in samples if s.utilization_pct is not None]
    utilization_how = (
        f"{METRIC_LABELS['gpu_utilization_pct']}: {TELEMETRY_HOW} "
        f"or state it ({meta_flag('gpu_utilization_pct', '85')})"
    )
    if utilization:
        found.put("gpu_utilization_pct", float(np.mean(utilization)), SOURCE_TELEMETRY, "")
    else:
        found.put("gpu_utilization_pct", fields.gpu_utilization_pct, SOURCE_STATED, utilization_how)

    total_power = _mean_total_power_w(samples)
    power_how = f"{METRIC_LABELS['power_w_per_gpu']}: {TELEMETRY_HOW} with power draw"
    if total_power is not None:
        gpus = len({s.gpu_index for s in samples if s.power_w is not None})
        found.put("power_w_per_gpu", total_power / gpus, SOURCE_TELEMETRY, "")
    else:
        found.put(
            "power_w_per_gpu",
            fields.watts_per_gpu,
            SOURCE_STATED,
            power_how + f" or state it ({meta_flag('watts_per_gpu', '700')})",
        )

    decode = found.values["decode_tokens_per_s"]
    joule_label = METRIC_LABELS["tokens_per_joule"]
    if total_power is None:
        joule_how = f"{joule_label}: {TELEMETRY_HOW} with power draw"
    elif decode is None:
        joule_how = f"{joule_label}: needs decode tok/s ({decode_how})"
    else:
        joule_how = f"{joule_label}: telemetry reports 0 W"
    found.put(
        "tokens_per_joule",
        decode / total_power if decode is not None and total_power else None,
        "decode tok/s / mean total telemetry power",
        joule_how,
    )


def _mean_total_power_w(samples: Sequence[TelemetrySample]) -> float | None:
    """Mean total power of the accelerators: the sum over GPUs of each GPU's mean power.

    Averaging per GPU first keeps the figure right when GPUs are sampled at different instants.
    """
    by_gpu: dict[int, list[float]] = {}
    for sample in samples:
        if sample.power_w is not None:
            by_gpu.setdefault(sample.gpu_index, []).append(sample.power_w)
    if not by_gpu:
        return None
    return float(sum(np.mean(powers) for powers in by_gpu.values()))


# --- chart helpers --------------------------------------------------------------------------


def timeline(artifact: BenchmarkArtifact, bucket_s: float = 1.0) -> Timeline | None:
    """Output tokens/s over the run, or None without per-request start times.

    The files record when each request started, its TTFT and end-to-end latency, not each
    token's time, so a request's output tokens are spread evenly from its first token to its
    end (all at once when the two coincide).
    """
    if not bucket_s > 0:
        raise ValueError("bucket_s must be more than 0")
    per_request = artifact.per_request
    if per_request is None or not per_request.start_s or not per_request.output_tokens:
        return None
    _check_aligned(per_request)
    ttfts = per_request.ttft_ms or (0.0,) * len(per_request.start_s)
    latencies = per_request.latency_ms or ttfts
    spans = [
        (start + ttft / 1000, start + max(latency, ttft) / 1000, tokens)
        for start, ttft, latency, tokens in zip(
            per_request.start_s, ttfts, latencies, per_request.output_tokens, strict=True
        )
    ]
    buckets = [0.0] * (math.floor(max(end for _, end, _ in spans) / bucket_s) + 1)
    for first, end, tokens in spans:
        if end <= first:
            buckets[math.floor(first / bucket_s)] += tokens
            continue
        for index in range(math.floor(first / bucket_s), math.floor(end / bucket_s) + 1):
            overlap = min(end, (index + 1) * bucket_s) - max(first, index * bucket_s)
            if overlap > 0:
                buckets[index] += tokens * overlap / (end - first)
    return Timeline(
        bucket_s=bucket_s,
        bucket_start_s=tuple(index * bucket_s for index in range(len(buckets))),
        output_tokens_per_s=tuple(tokens / bucket_s for tokens in buckets),
    )


def distribution(values: Sequence[float]) -> Distribution | None:
    """Count, mean, min, p50 / p95 / p99 (linear interpolation) and max; None when empty."""
    if not values:
        return None
    array = np.asarray(values, dtype=float)
    p50, p95, p99 = (float(v) for v in np.percentile(array, [50, 95, 99]))
    return Distribution(
        count=len(array),
        mean=float(array.mean()),
        minimum=float(array.min()),
        p50=p50,
        p95=p95,
        p99=p99,
        maximum=float(array.max()),
    )
