"""Rollups against an independent computation: plain Python sums and numpy percentiles."""

from __future__ import annotations

import pickle
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import numpy as np

from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.ingestion.rollups import IngestAggregate, RollupKey
from audit_app.ingestion.token_logs.base import CanonicalRequest
from audit_app.ingestion.token_logs.frame import requests_to_frame
from tests.support.canonical_requests import canonical_request

START = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)


def _requests(n: int, seed: int) -> list[CanonicalRequest]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        started = START + timedelta(seconds=rng.randrange(0, 3 * 24 * 3600))
        ttft = rng.lognormvariate(5.5, 0.6)  # ms
        output = rng.choice([1, 2, 40, 300])
        tpot = rng.lognormvariate(3.0, 0.3)
        latency = ttft + tpot * max(output - 1, 0)
        streamed = rng.random() < 0.6
        cost = None if rng.random() < 0.3 else Decimal(rng.randrange(1, 10_000)) / Decimal(10**7)
        out.append(
            CanonicalRequest(
                started_at=started,
                ended_at=started + timedelta(milliseconds=latency),
                first_token_at=started + timedelta(milliseconds=ttft) if streamed else None,
                workload=rng.choice(["chat", "evals", "embed"]),
                team=rng.choice(["a", "b"]),
                end_user=rng.choice(["", "u1", "u2", "u3"]),
                caller="svc",
                provider="openai",
                model=rng.choice(["gpt-4o", "gpt-4o-mini"]),
                operation="chat",
                streaming=streamed,
                batch_api=rng.random() < 0.1,
                input_tokens=rng.randrange(0, 5000),
                output_tokens=output,
                cached_input_tokens=0,
                cost_usd=cost,
                status="error" if rng.random() < 0.05 else "success",
                request_id=f"r{i}",
                pool="",
                line=i + 2,
            )
        )
    return out


def _key(r: CanonicalRequest) -> RollupKey:
    return RollupKey(
        hour=r.started_at.replace(minute=0, second=0, microsecond=0),
        workload=r.workload,
        team=r.team,
        provider=r.provider,
        model=r.model,
        pool=r.pool,
        operation=r.operation,
        batch_api=r.batch_api,
    )


def test_rollups_match_an_independent_computation() -> None:
    requests = _requests(6000, seed=11)
    aggregate = IngestAggregate()
    # Uneven chunks, as the importers produce them.
    for lo, hi in [(0, 1000), (1000, 1001), (1001, 4500), (4500, 6000)]:
        aggregate.add_frame(requests_to_frame(requests[lo:hi]))

    expected: dict[RollupKey, dict[str, object]] = defaultdict(
        lambda: {
            "requests": 0,
            "errors": 0,
            "input": 0,
            "output": 0,
            "streaming": 0,
            "logged": 0,
            "cost": Decimal(0),
            "unlogged_in": 0,
            "unlogged_out": 0,
            "users": set(),
            "latency": [],
            "ttft": [],
            "tpot": [],
        }
    )
    for r in requests:
        e = expected[_key(r)]
        e["requests"] += 1
        e["errors"] += r.status == "error"
        e["input"] += r.input_tokens
        e["output"] += r.output_tokens
        e["streaming"] += bool(r.streaming)
        if r.cost_usd is None:
            e["unlogged_in"] += r.input_tokens
            e["unlogged_out"] += r.output_tokens
        else:
            e["logged"] += 1
            e["cost"] += r.cost_usd
        if r.end_user:
            e["users"].add(r.end_user)
        e["latency"].append(r.latency_ms)
        if r.ttft_ms is not None:
            e["ttft"].append(r.ttft_ms)
        if r.tpot_ms is not None:
            e["tpot"].append(r.tpot_ms)

    assert set(aggregate.rollups) == set(expected)
    for key, e in expected.items():
        got = aggregate.rollups[key]
        assert got.requests == e["requests"]
        assert got.errors == e["errors"]
        assert got.input_tokens == e["input"]
        assert got.output_tokens == e["output"]
        assert got.streaming_requests == e["streaming"]
        assert got.logged_requests == e["logged"]
        assert got.logged_cost_usd == e["cost"]
        assert got.unlogged_input_tokens == e["unlogged_in"]
        assert got.unlogged_output_tokens == e["unlogged_out"]
        assert len(got.end_users) == len(e["users"])
        assert got.latency.count == len(e["latency"])
        assert got.ttft.count == len(e["ttft"])
        assert got.tpot.count == len(e["tpot"])
    # Percentiles of merged rollups, read from bins, within 1 % of numpy on the raw values.
    for workload in ["chat", "evals", "embed"]:
        merged = IngestAggregate()
        values = [x for k, e in expected.items() if k.workload == workload for x in e["latency"]]
        from audit_app.ingestion.histograms import LatencyHistogram

        hist = LatencyHistogram.merge_all(
            t.latency for k, t in aggregate.rollups.items() if k.workload == workload
        )
        for q in (0.5, 0.95, 0.99):
            exact = float(np.percentile(values, q * 100))
            assert abs(hist.quantile(q) - exact) / exact < 0.01
        assert merged.rollups == {}


def test_day_shapes_count_minutes_hours_users_and_callers() -> None:
    requests = _requests(2000, seed=5)
    aggregate = IngestAggregate()
    aggregate.add_frame(requests_to_frame(requests[:700]))
    aggregate.add_frame(requests_to_frame(requests[700:]))
    minutes: dict[tuple[object, str], list[int]] = defaultdict(lambda: [0] * 60)
    hours: dict[tuple[object, str], list[int]] = defaultdict(lambda: [0] * 24)
    for r in requests:
        key = (r.started_at.date(), r.workload)
        minutes[key][r.started_at.minute] += 1
        hours[key][r.started_at.hour] += 1
    assert set(aggregate.days) == set(minutes)
    for key, shape in aggregate.days.items():
        assert shape.minute_counts.tolist() == minutes[key]
        assert shape.hour_counts.tolist() == hours[key]
        assert shape.requests == sum(minutes[key])
        assert shape.callers == {"svc"}
        assert len(shape.end_users) == 3


def test_merging_aggregates_equals_one_aggregate() -> None:
    requests = _requests(1500, seed=3)
    whole = IngestAggregate()
    whole.add_frame(requests_to_frame(requests))
    left, right = IngestAggregate(), IngestAggregate()
    left.add_frame(requests_to_frame(requests[:600]))
    right.add_frame(requests_to_frame(requests[600:]))
    left.merge(right)
    assert set(left.rollups) == set(whole.rollups)
    for key, totals in whole.rollups.items():
        other = left.rollups[key]
        assert (other.requests, other.input_tokens, other.logged_cost_nanos) == (
            totals.requests,
            totals.input_tokens,
            totals.logged_cost_nanos,
        )
        assert other.latency == totals.latency
        assert other.end_users == totals.end_users


def test_parts_merged_after_a_pickle_round_trip_equal_one_aggregate() -> None:
    """Fan-out pickles each part's aggregate: end users travel as an array (a set again only
    where two parts share a rollup) and histograms in their binary form."""
    requests = sorted(_requests(1500, seed=4), key=lambda r: r.started_at)
    whole = IngestAggregate()
    whole.add_frame(requests_to_frame(requests))
    parts = []
    for piece in (requests[:500], requests[500:1000], requests[1000:]):
        part = IngestAggregate()
        part.add_frame(requests_to_frame(piece))
        parts.append(pickle.loads(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)))
    first = next(iter(parts[0].rollups.values()))
    assert isinstance(first.end_users, np.ndarray)
    merged = parts[0].merge(parts[1]).merge(parts[2])
    assert set(merged.rollups) == set(whole.rollups)
    shared = 0
    for key, totals in whole.rollups.items():
        other = merged.rollups[key]
        shared += isinstance(other.end_users, set)
        assert other.requests == totals.requests
        assert sorted(np.asarray(list(other.end_users)).tolist()) == sorted(totals.end_users)
        assert other.latency == totals.latency
        # What lands (sums may differ in the last bits: float addition order).
        assert LatencyHistogram.from_bytes(other.latency.to_bytes()) == totals.latency
    assert shared > 0  # some hours straddle the cuts: merged as sets
    assert merged.days.keys() == whole.days.keys()


def test_distinct_users_sketch_is_exact_when_small_and_close_when_large() -> None:
    import numpy as np

    from audit_app.ingestion.rollups import KMV_SIZE, distinct_estimate, distinct_sketch

    small = [5, -3, 5, 9]
    assert distinct_sketch(small) == [-3, 5, 9] and distinct_estimate(distinct_sketch(small)) == 3
    rng = np.random.default_rng(4)
    hashes = rng.integers(-(2**63), 2**63 - 1, size=200_000, dtype=np.int64).tolist()
    first, second = hashes[:120_000], hashes[80_000:]
    merged = distinct_sketch(distinct_sketch(first) + distinct_sketch(second))
    assert len(merged) == KMV_SIZE
    # Union of the two halves is 200,000 distinct values; KMV's error is ~1/sqrt(1024) = 3 %.
    assert abs(distinct_estimate(merged) - 200_000) / 200_000 < 0.1


# --- Single guards, each with hand-made requests ---------------------------------------------
def _one(
    *,
    minutes: int = 0,
    workload: str = "chat",
    team: str = "a",
    caller: str = "svc",
    end_user: str = "",
    streaming: bool | None = False,
    ttft_ms: float | None = None,
    latency_ms: float = 100.0,
    input_tokens: int = 0,
    output_tokens: int = 1,
) -> CanonicalRequest:
    """One request on 2026-11-02, `minutes` after midnight."""
    started = START + timedelta(minutes=minutes)
    return canonical_request(
        started_at=started,
        ended_at=started + timedelta(milliseconds=latency_ms),
        first_token_at=None if ttft_ms is None else started + timedelta(milliseconds=ttft_ms),
        workload=workload,
        team=team,
        end_user=end_user,
        caller=caller,
        streaming=streaming,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        status="success",
        line=minutes + 2,
    )


def _aggregate(*chunks: list[CanonicalRequest]) -> IngestAggregate:
    aggregate = IngestAggregate()
    for chunk in chunks:
        aggregate.add_frame(requests_to_frame(chunk))
    return aggregate


def test_a_full_sketch_estimates_k_minus_one_over_its_kth_smallest_hash() -> None:
    from audit_app.ingestion.rollups import KMV_SIZE, distinct_estimate, distinct_sketch

    assert KMV_SIZE == 1024  # the hand computation below
    # 1,024 hashes spread evenly over the lowest 1/1024 of the space: shifted into [0, 2^64)
    # the i-th is (i + 1) * 2^44 - 1, so the k-th smallest is 2^54 - 1, u_k = 2^54 / 2^64
    # = 2^-10 and the estimate (k - 1) / u_k = 1023 * 1024 = 1,047,552.
    sketch = [(i + 1) * 2**44 - 1 - 2**63 for i in range(KMV_SIZE)]
    assert distinct_sketch(sketch) == sketch
    assert distinct_estimate(sketch) == 1_047_552
    assert distinct_estimate(sketch[:-1]) == 1023  # not full: exact


def test_only_requests_known_to_stream_count_as_streaming() -> None:
    aggregate = _aggregate([_one(streaming=True), _one(streaming=False), _one(streaming=None)])
    [totals] = aggregate.rollups.values()
    assert (totals.requests, totals.streaming_requests) == (3, 1)  # unknown is not streamed


def test_a_one_token_answer_has_no_time_per_output_token() -> None:
    aggregate = _aggregate(
        [
            # First token at 100 ms, end at 300 ms: 1 output token has no time per token...
            _one(streaming=True, ttft_ms=100.0, latency_ms=300.0, output_tokens=1),
            # ...3 have (300 - 100) / (3 - 1) = 100 ms each.
            _one(streaming=True, ttft_ms=100.0, latency_ms=300.0, output_tokens=3),
        ]
    )
    [totals] = aggregate.rollups.values()
    assert (totals.ttft.count, totals.latency.count) == (2, 2)
    assert (totals.tpot.count, totals.tpot.total) == (1, 100.0)


def test_a_duration_below_zero_counts_as_zero() -> None:
    # Parsers reject an end before the start; a frame built without them must not fail on it.
    aggregate = _aggregate([_one(latency_ms=-5.0), _one(latency_ms=40.0)])
    [totals] = aggregate.rollups.values()
    assert (totals.latency.count, totals.latency.zero_count) == (2, 1)
    assert totals.latency.total == 40.0  # 0 + 40


def test_a_days_callers_stop_growing_once_a_chunk_finds_the_cap_reached() -> None:
    from audit_app.ingestion.rollups import MAX_CALLERS_PER_DAY

    names = [f"c{i:03d}" for i in range(MAX_CALLERS_PER_DAY)]
    # The first chunk brings exactly the cap (and a request with no caller, not a caller).
    first = [_one(minutes=i, caller=name) for i, name in enumerate(names)]
    aggregate = _aggregate([*first, _one(caller="")], [_one(caller="late")])
    [shape] = aggregate.days.values()
    assert shape.callers == set(names)
    assert shape.requests == MAX_CALLERS_PER_DAY + 2


def test_merged_day_shapes_unite_callers_and_users_and_add_counts() -> None:
    left = _aggregate([_one(minutes=5, caller="a", end_user="u1"), _one(minutes=65, caller="b")])
    right = _aggregate(
        [_one(minutes=5, caller="b", end_user="u1"), _one(minutes=6, caller="c", end_user="u2")]
    )
    left.merge(right)
    [shape] = left.days.values()
    assert shape.callers == {"a", "b", "c"}
    assert len(shape.end_users) == 2  # u1 on both sides, u2
    assert shape.requests == 4
    # Minute 5: 00:05 on each side and 01:05 (3); minute 6: 00:06 (1). Hours 0 and 1: 3, 1.
    assert (shape.minute_counts[5], shape.minute_counts[6]) == (3, 1)
    assert (shape.hour_counts[0], shape.hour_counts[1]) == (3, 1)


def test_renaming_caps_only_the_callers_of_folded_days() -> None:
    from audit_app.ingestion.rollups import MAX_CALLERS_PER_DAY

    assert MAX_CALLERS_PER_DAY == 200  # the counts below
    # One chunk each takes all its callers (the cap is checked before a chunk): "big" 250,
    # "x" and "y" 150 each, which fold into one day of 300, capped to the first 200 by name:
    # x000..x149 and y000..y049.
    big = [_one(workload="big", caller=f"b{i:03d}") for i in range(250)]
    x = [_one(workload="x", caller=f"x{i:03d}") for i in range(150)]
    y = [_one(workload="y", caller=f"y{i:03d}") for i in range(150)]
    aggregate = _aggregate(big, x, y)
    renamed = aggregate.renamed(workloads={"x": "other", "y": "other"}, teams={})
    callers = {workload: shape.callers for (_, workload), shape in renamed.days.items()}
    assert len(callers["big"]) == 250
    assert callers["other"] == {f"x{i:03d}" for i in range(150)} | {f"y{i:03d}" for i in range(50)}


def test_token_weights_add_input_and_output_tokens_and_requests_per_name() -> None:
    aggregate = _aggregate(
        [
            _one(workload="w1", team="t1", input_tokens=100, output_tokens=10),
            _one(minutes=60, workload="w1", team="t2", input_tokens=50, output_tokens=5),
            _one(workload="w2", team="t1", input_tokens=7, output_tokens=3),
        ]
    )
    # w1: 100 + 10 + 50 + 5 = 165 over 2; w2: 7 + 3 = 10 over 1.
    assert aggregate.token_weights("workload") == {"w1": (165, 2), "w2": (10, 1)}
    # t1: 100 + 10 + 7 + 3 = 120 over 2; t2: 50 + 5 = 55 over 1.
    assert aggregate.token_weights("team") == {"t1": (120, 2), "t2": (55, 1)}
