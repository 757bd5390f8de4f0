"""Synthetic LLM request logs for the demo, the benchmarks and the tests.

Its rules in full: `docs/methods.md`, section "The demo's traffic".
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa

from audit_app.costs.pricing import Price, PriceBook
from audit_app.demo.workloads import (
    DEFAULT_WORKLOADS,
    OPERATION_EMBEDDING,
    LatencyProfile,
    TrafficShape,
    WorkloadSpec,
)

# ---------------------------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------------------------

STATUS_SUCCESS = "success"
STATUS_ERROR = "error"

REQUEST_COLUMNS = (
    "request_id",
    "workload",
    "team",
    "caller",
    "provider",
    "model",
    "operation",
    "pool",
    "end_user",
    "started_at",
    "first_token_at",
    "ended_at",
    "ttft_ms",
    "tpot_ms",
    "latency_ms",
    "streaming",
    "batch_api",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cost_usd",
    "status",
)
MINUTE_US = 60 * 1_000_000
HOUR_US = 60 * MINUTE_US
DAY_US = 24 * HOUR_US
# 1970-01-01, where epoch hours start, was a Thursday (Monday = 0).
EPOCH_WEEKDAY = 3
NOT_A_TIME = np.iinfo(np.int64).min  # datetime64's NaT

INPUT_TOKEN_SPREAD = 0.6  # lognormal sigma of prompt sizes
OUTPUT_TOKEN_SPREAD = 0.7
BURST_SIZE_SPREAD = 0.5  # lognormal sigma of the size of one burst
MAX_INPUT_TOKENS = 200_000
MAX_OUTPUT_TOKENS = 16_384
# A batch-API request sits in the provider's queue before it runs (OpenAI promises 24 h; most
# finish within the hour).
BATCH_WAIT_MEDIAN_MINUTES = 20.0
BATCH_WAIT_SPREAD = 0.8
ERROR_LATENCY_MEDIAN_MS = 1_200.0
ERROR_LATENCY_SPREAD = 1.0

# What `_workload_requests` returns, before text columns are attached.
NUMERIC_PART_COLUMNS = (
    "end_user_index",
    "started_at",
    "first_token_at",
    "ended_at",
    "ttft_ms",
    "tpot_ms",
    "latency_ms",
    "streaming",
    "batch_api",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cost_usd",
    "is_error",
)


# ---------------------------------------------------------------------------------------------
# Prices the gateway logs (USD per million tokens, from reference/hardware-catalog.csv)
# ---------------------------------------------------------------------------------------------


def _gateway_price(
    provider: str,
    model: str,
    input_price: str,
    output_price: str,
    *,
    cached: str | None = None,
    batch: bool = False,
) -> Price:
    half = Decimal("0.5")
    return Price(
        card_id=None,
        provider=provider,
        model=model,
        valid_from=date(2024, 1, 1),
        input=Decimal(input_price),
        output=Decimal(output_price),
        cached_input=Decimal(cached) if cached is not None else None,
        batch_input=Decimal(input_price) * half if batch else None,
        batch_output=Decimal(output_price) * half if batch else None,
    )


GATEWAY_PRICES: tuple[Price, ...] = (
    _gateway_price("openai", "gpt-4o", "2.5", "10", cached="1.25", batch=True),
    _gateway_price("openai", "gpt-4o-mini", "0.15", "0.6", cached="0.075", batch=True),
    _gateway_price("openai", "gpt-4.1-mini", "0.4", "1.6", cached="0.1", batch=True),
    _gateway_price("openai", "text-embedding-3-small", "0.02", "0"),
    _gateway_price("anthropic", "claude-sonnet-4-5", "3", "15", cached="0.3", batch=True),
    _gateway_price("anthropic", "claude-haiku-4-5", "1", "5", cached="0.1", batch=True),
    _gateway_price("aws-bedrock", "anthropic.claude-haiku-4-5", "1", "5"),
)
_GATEWAY_BOOK = PriceBook(GATEWAY_PRICES)


def gateway_price(spec: WorkloadSpec) -> Price | None:
    """The price a gateway would log this workload's requests at; None when it has none."""
    return _GATEWAY_BOOK.find(provider=spec.provider, model=spec.model, day=date(2025, 1, 1))


# ---------------------------------------------------------------------------------------------
# Request generation
# ---------------------------------------------------------------------------------------------


def expected_requests_per_day(
    workloads: Sequence[WorkloadSpec] | None = None, *, scale: float = 1.0
) -> float:
    """Mean requests per day over a week (before clipping at the window's edges)."""
    specs = DEFAULT_WORKLOADS if workloads is None else workloads
    return sum(spec.traffic.requests_per_day for spec in specs) * scale


def generate_requests(
    *,
    start: datetime,
    days: int,
    workloads: Sequence[WorkloadSpec] | None = None,
    scale: float = 1.0,
    seed: int = 0,
    first_row: int = 0,
) -> pd.DataFrame:
    """One row per request for `days` days from `start` (see the module docstring for columns).

    `scale` multiplies every workload's request rate (burst counts stay, burst sizes scale).
    The same arguments always give the same frame; each workload draws from its own random
    stream keyed by its name, so adding a workload does not change the others' requests.
    `first_row` is the row number of the frame's first request in a file written in parts
    (request ids stay unique across the parts).
    """
    specs = _checked_workloads(start=start, days=days, scale=scale, workloads=workloads)
    start_us = _datetime_to_us(start)
    end_us = start_us + days * DAY_US
    parts = [
        _workload_requests(
            spec,
            start_us=start_us,
            end_us=end_us,
            scale=scale,
            rng=np.random.default_rng([seed, zlib.crc32(spec.name.encode("utf-8"))]),
        )
        for spec in specs
    ]
    numeric, workload_index = _in_start_order(parts)
    id_rng = np.random.default_rng([seed, 0x1D])
    columns = _text_columns(specs, numeric=numeric, workload_index=workload_index)
    columns["request_id"] = _text_series(
        _request_ids(id_rng, size=workload_index.size, first_row=first_row)
    )
    for name in ("started_at", "first_token_at", "ended_at"):
        columns[name] = pd.Series(
            numeric[name].astype(np.int64).astype("datetime64[us]")
        ).dt.tz_localize(UTC)
    for name in ("streaming", "batch_api"):
        columns[name] = numeric[name].astype(bool)
    for name in ("input_tokens", "output_tokens", "cached_input_tokens"):
        columns[name] = numeric[name].astype(np.int64)
    for name in ("ttft_ms", "tpot_ms", "latency_ms", "cost_usd"):
        columns[name] = numeric[name].astype(np.float64)
    return pd.DataFrame({name: columns[name] for name in REQUEST_COLUMNS})


def _checked_workloads(
    *, start: datetime, days: int, scale: float, workloads: Sequence[WorkloadSpec] | None
) -> tuple[WorkloadSpec, ...]:
    """The workloads to generate (the default set when None); raises `ValueError` on bad input."""
    if start.tzinfo is None:
        raise ValueError("start must be timezone-aware (UTC)")
    if days < 1:
        raise ValueError("days must be at least 1")
    if scale < 0:
        raise ValueError("scale cannot be negative")
    specs = DEFAULT_WORKLOADS if workloads is None else tuple(workloads)
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise ValueError("workload names must be unique")
    return specs


def _in_start_order(
    parts: Sequence[dict[str, np.ndarray]],
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every workload's numeric columns as one set, sorted by start time, and per row the index
    of the row's workload."""
    numeric = {
        name: np.concatenate([part[name] for part in parts]) if parts else np.array([])
        for name in NUMERIC_PART_COLUMNS
    }
    workload_index = np.concatenate(
        [np.full(part["started_at"].size, index) for index, part in enumerate(parts)]
        if parts
        else [np.array([], dtype=np.int64)]
    )
    order = np.argsort(numeric["started_at"], kind="stable")
    return {name: values[order] for name, values in numeric.items()}, workload_index[order]


def _text_columns(
    specs: Sequence[WorkloadSpec], *, numeric: dict[str, np.ndarray], workload_index: np.ndarray
) -> dict[str, object]:
    """The text columns but the request id, as Arrow dictionary lookups: one Python string per
    distinct value."""

    def per_workload(attribute: str) -> pd.Series:
        values = pa.array([getattr(spec, attribute) for spec in specs], type=pa.string())
        return _text_series(values.take(pa.array(workload_index, type=pa.int64())))

    # Each workload's end users are numbered within it; "" stands for "no end user". Workloads
    # with the same prefix share names: the same customers use the web chat and the help desk.
    end_user_names = [""] + [
        f"{spec.end_user_prefix}{index:05d}" for spec in specs for index in range(spec.end_users)
    ]
    first_name = np.cumsum([1] + [spec.end_users for spec in specs])[:-1]
    end_user_code = np.where(
        numeric["end_user_index"] >= 0,
        first_name[workload_index] + numeric["end_user_index"],
        0,
    ).astype(np.int64)
    statuses = pa.array([STATUS_SUCCESS, STATUS_ERROR], type=pa.string())
    return {
        "workload": per_workload("name"),
        "team": per_workload("team"),
        "caller": per_workload("caller"),
        "provider": per_workload("provider"),
        "model": per_workload("model"),
        "operation": per_workload("operation"),
        "pool": per_workload("pool"),
        "end_user": _text_series(
            pa.array(end_user_names, type=pa.string()).take(pa.array(end_user_code))
        ),
        "status": _text_series(statuses.take(pa.array(numeric["is_error"].astype(np.int64)))),
    }


def _text_series(values: pa.Array) -> pd.Series:
    """A pandas text column straight from Arrow, without a Python object per row."""
    return pd.Series(values, dtype="str")


def _datetime_to_us(moment: datetime) -> int:
    return (moment.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def _arrival_times(
    traffic: TrafficShape,
    *,
    start_us: int,
    end_us: int,
    scale: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Sorted arrival times (epoch µs) in [start_us, end_us)."""
    hours = np.arange(start_us // HOUR_US, -(-end_us // HOUR_US), dtype=np.int64)
    local_hours = hours + traffic.utc_offset_hours
    weekday = (local_hours // 24 + EPOCH_WEEKDAY) % 7
    weights = (
        np.asarray(traffic.weekday_weights)[weekday]
        * np.asarray(traffic.hour_weights)[local_hours % 24]
    )
    active_us = traffic.active_minutes * MINUTE_US
    if traffic.bursts_per_day > 0:
        burst_count = rng.poisson(traffic.bursts_per_day * hours.size / 24)
        if weights.sum() <= 0 or burst_count == 0:
            return np.array([], dtype=np.int64)
        burst_hours = rng.choice(hours, size=burst_count, p=weights / weights.sum())
        burst_starts = burst_hours * HOUR_US + rng.integers(0, active_us, size=burst_count)
        mean_size = traffic.requests_per_day * scale / traffic.bursts_per_day
        sizes = rng.poisson(
            mean_size
            * rng.lognormal(-(BURST_SIZE_SPREAD**2) / 2, BURST_SIZE_SPREAD, size=burst_count)
        )
        starts = np.repeat(burst_starts, sizes)
        burst_us = int(traffic.burst_minutes * MINUTE_US)
        times = starts + rng.integers(0, burst_us, size=starts.size)
    else:
        rate_per_hour = traffic.requests_per_day / 24 * weights / traffic.mean_hour_weight * scale
        counts = rng.poisson(rate_per_hour)
        slots = np.repeat(hours, counts)
        times = slots * HOUR_US + rng.integers(0, active_us, size=slots.size)
    times = times[(times >= start_us) & (times < end_us)]
    return np.sort(times)


def _lognormal_tokens(
    rng: np.random.Generator, *, mean: float, spread: float, size: int, upper: int
) -> np.ndarray:
    """Whole token counts ≥ 1 whose mean is about `mean` (before clipping)."""
    mu = math.log(max(mean, 1.0)) - spread**2 / 2
    return np.clip(np.rint(rng.lognormal(mu, spread, size=size)), 1, upper).astype(np.int64)


def _workload_requests(
    spec: WorkloadSpec,
    *,
    start_us: int,
    end_us: int,
    scale: float,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """One workload's requests as the columns of `NUMERIC_PART_COLUMNS`.

    The steps draw from `rng` in a fixed order, so the same seed gives the same requests.
    """
    started = _arrival_times(spec.traffic, start_us=start_us, end_us=end_us, scale=scale, rng=rng)
    size = started.size
    is_error = rng.random(size) < spec.error_share
    batch_api = rng.random(size) < spec.batch_api_share
    is_embedding = spec.operation == OPERATION_EMBEDDING
    streaming = (rng.random(size) < spec.streaming_share) & ~batch_api & ~is_embedding
    input_tokens, output_tokens, cached_tokens = _token_usage(
        spec, rng=rng, streaming=streaming, is_error=is_error
    )
    timing = _request_timing(
        spec.latency,
        rng=rng,
        started=started,
        output_tokens=output_tokens,
        streaming=streaming,
        batch_api=batch_api,
        is_error=is_error,
    )
    cost = _logged_cost(
        spec,
        input_tokens=input_tokens,
        cached_tokens=cached_tokens,
        output_tokens=output_tokens,
        batch_api=batch_api,
    )
    return {
        "end_user_index": _end_user_indexes(spec, rng=rng, size=size),
        "started_at": started,
        "first_token_at": timing.first_token,
        "ended_at": timing.ended,
        "ttft_ms": timing.ttft_ms,
        "tpot_ms": timing.tpot_ms,
        "latency_ms": timing.latency_ms,
        "streaming": streaming,
        "batch_api": batch_api,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cached_input_tokens": cached_tokens,
        "cost_usd": cost,
        "is_error": is_error,
    }


def _token_usage(
    spec: WorkloadSpec, *, rng: np.random.Generator, streaming: np.ndarray, is_error: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(input, output, cached input) tokens per request; a failed request reports none."""
    size = streaming.size
    input_tokens = _lognormal_tokens(
        rng,
        mean=spec.mean_input_tokens,
        spread=INPUT_TOKEN_SPREAD,
        size=size,
        upper=MAX_INPUT_TOKENS,
    )
    if spec.operation == OPERATION_EMBEDDING:
        output_tokens = np.zeros(size, dtype=np.int64)
    else:
        output_tokens = _lognormal_tokens(
            rng,
            mean=spec.mean_output_tokens,
            spread=OUTPUT_TOKEN_SPREAD,
            size=size,
            upper=MAX_OUTPUT_TOKENS,
        )
        # A streamed answer of one token has no first-token time apart from its end; real
        # streamed answers are longer, and the LiteLLM format could not tell them apart.
        output_tokens = np.where(streaming, np.maximum(output_tokens, 2), output_tokens)
    cached_fraction = np.clip(rng.uniform(0.0, 2.0 * spec.cached_input_share, size), 0.0, 1.0)
    cached_tokens = np.floor(input_tokens * cached_fraction).astype(np.int64)
    input_tokens[is_error] = 0
    output_tokens[is_error] = 0
    cached_tokens[is_error] = 0
    return input_tokens, output_tokens, cached_tokens


@dataclass(frozen=True, kw_only=True)
class _Timing:
    """Per request: first token and end (epoch µs; `NOT_A_TIME` for no first token) and the
    latency figures derived from them (NaN where undefined)."""

    first_token: np.ndarray
    ended: np.ndarray
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    latency_ms: np.ndarray


def _request_timing(
    profile: LatencyProfile,
    *,
    rng: np.random.Generator,
    started: np.ndarray,
    output_tokens: np.ndarray,
    streaming: np.ndarray,
    batch_api: np.ndarray,
    is_error: np.ndarray,
) -> _Timing:
    """When each request's first token and end come: a batch request waits in the queue first,
    a failed one ends after an error latency; only a streamed success has a first token."""
    size = started.size
    ttft_us = np.rint(profile.ttft_ms * 1_000 * rng.lognormal(0.0, profile.spread, size)).astype(
        np.int64
    )
    ttft_us = np.maximum(ttft_us, 1)
    tpot_us = profile.tpot_ms * 1_000 * rng.lognormal(0.0, profile.spread, size)
    decode_us = np.rint(tpot_us * np.maximum(output_tokens - 1, 0)).astype(np.int64)
    batch_wait_us = np.where(
        batch_api,
        np.rint(
            BATCH_WAIT_MEDIAN_MINUTES * MINUTE_US * rng.lognormal(0.0, BATCH_WAIT_SPREAD, size)
        ),
        0,
    ).astype(np.int64)
    error_latency_us = np.rint(
        ERROR_LATENCY_MEDIAN_MS * 1_000 * rng.lognormal(0.0, ERROR_LATENCY_SPREAD, size)
    ).astype(np.int64)
    first_token = started + batch_wait_us + ttft_us
    ended = np.where(is_error, started + error_latency_us, first_token + decode_us)
    has_first_token = streaming & ~is_error
    first_token = np.where(has_first_token, first_token, NOT_A_TIME)
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot_ms = np.where(
            has_first_token & (output_tokens > 1),
            (ended - first_token) / 1_000 / (output_tokens - 1),
            np.nan,
        )
    return _Timing(
        first_token=first_token,
        ended=ended,
        ttft_ms=np.where(has_first_token, (first_token - started) / 1_000, np.nan),
        tpot_ms=tpot_ms,
        latency_ms=(ended - started) / 1_000,
    )


def _end_user_indexes(spec: WorkloadSpec, *, rng: np.random.Generator, size: int) -> np.ndarray:
    """Each request's end user, numbered within the workload; -1 when it has none."""
    if spec.end_users > 0:
        # Squaring a uniform favours low indexes: a few heavy users, a long tail of light ones.
        indexes: np.ndarray = np.floor(spec.end_users * rng.random(size) ** 2).astype(np.int64)
        return indexes
    return np.full(size, -1, dtype=np.int64)


def _logged_cost(
    spec: WorkloadSpec,
    *,
    input_tokens: np.ndarray,
    cached_tokens: np.ndarray,
    output_tokens: np.ndarray,
    batch_api: np.ndarray,
) -> np.ndarray:
    """USD per request as the gateway logs it (float, like LiteLLM's `spend`); NaN if none."""
    if not spec.log_has_cost:
        return np.full(input_tokens.size, np.nan)
    price = gateway_price(spec)
    if price is None:
        raise ValueError(
            f"workload {spec.name!r} says its log carries cost, but no gateway price matches "
            f"{spec.provider}/{spec.model}"
        )
    input_price = float(price.input)
    output_price = float(price.output)
    batch_input = float(price.batch_input) if price.batch_input else input_price
    batch_output = float(price.batch_output) if price.batch_output else output_price
    per_input = np.where(batch_api, batch_input, input_price)
    per_output = np.where(batch_api, batch_output, output_price)
    per_cached = float(price.cached_input) if price.cached_input is not None else per_input
    total = (
        (input_tokens - cached_tokens) * per_input
        + cached_tokens * per_cached
        + output_tokens * per_output
    )
    return total / 1_000_000


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """A bijection on uint64 that scatters consecutive integers (SplitMix64's finaliser)."""
    mixed = values + np.uint64(0x9E3779B97F4A7C15)
    mixed = (mixed ^ (mixed >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    mixed = (mixed ^ (mixed >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return mixed ^ (mixed >> np.uint64(31))


def _request_ids(rng: np.random.Generator, *, size: int, first_row: int) -> pa.Array:
    """32 hex digits: 64 random bits, then a bijection of the row number (so ids are unique)."""
    words = np.empty((size, 2), dtype=">u8")
    words[:, 0] = rng.bit_generator.random_raw(size)
    words[:, 1] = _splitmix64(np.arange(first_row, first_row + size, dtype=np.uint64))
    hex_digits = pa.py_buffer(words.tobytes().hex().encode("ascii"))
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(32), size, [None, hex_digits])
    return fixed.cast(pa.string())
