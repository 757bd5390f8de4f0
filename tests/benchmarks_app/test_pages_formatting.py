"""Benchmark pages read in units: latencies as durations, costs as prices, changes signed."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from benchmarks_app.models import BenchmarkPoint, BenchmarkRun, Gate
from tests.factories import UploadFactory

pytestmark = pytest.mark.django_db

METRICS = {
    "ttft_p50_ms": 324.7995,
    "ttft_p95_ms": 444.2928,
    "tpot_p95_ms": 35.37255,
    "e2e_p95_ms": 4827.8592,
    "decode_tokens_per_s": 578.42148,
    "output_tokens_per_gpu_hour": 260289.666,
    "gpu_utilization_pct": 80,
    "tokens_per_joule": 0.4567,
}


def _run(name: str, **metrics: Any) -> BenchmarkRun:
    upload = UploadFactory(kind="benchmark")
    run = BenchmarkRun.objects.create(
        upload=upload,
        name=name,
        tool="vllm",
        model="llama-70b",
        # As the import stores them (`jsonable(RunFields)`): Decimals as text, counts as numbers.
        fields={"model": "llama-70b", "usd_per_gpu_hour": "4.00", "num_gpus": 8},
    )
    BenchmarkPoint.objects.create(
        run=run,
        index=0,
        upload=upload,
        load={"request_rate": "unlimited"},
        metrics={**METRICS, **metrics},
    )
    return run


def _cells(html: str, label: str) -> str:
    start = html.index(f"<td>{label}</td>")
    return html[start : html.index("</tr>", start)]


def test_run_page_reads_in_units(client: Client, engineer_user: Any) -> None:
    run = _run("baseline")
    client.force_login(engineer_user)
    html = client.get(f"/benchmarks/runs/{run.pk}/").content.decode()
    assert '<td class="num">325 ms</td>' in _cells(html, "P50 TTFT")  # 324.7995 ms
    assert '<td class="num">444 ms</td>' in _cells(html, "P95 TTFT")
    assert '<td class="num">35.4 ms</td>' in _cells(html, "P95 TPOT")
    assert '<td class="num">4.83 s</td>' in _cells(html, "P95 end-to-end latency")  # 4,827.8592 ms
    assert '<td class="num">—</td>' in _cells(html, "P95 ITL")  # not in the metrics
    assert '<td class="num">578.4</td>' in _cells(html, "Decode tok/s")
    assert '<td class="num">260,290</td>' in _cells(html, "Output tokens per GPU-hour")
    assert '<td class="num">80.0 %</td>' in _cells(html, "GPU utilization")
    assert '<td class="num">0.46</td>' in _cells(html, "Tokens per joule")
    # $4 x 8 GPUs / (578.42148 tok/s x 3,600 s) x 1e6 = 32e6 / 2,082,317.328 = $15.3675
    assert "busy-only cost <strong>$15.37</strong> per 1M output tokens" in html

    listing = client.get("/benchmarks/").content.decode()
    row = listing[listing.index(f"{run.pk}: baseline") :]
    row = row[: row.index("</tr>")]
    assert ">578.4<" in row and ">444 ms<" in row and ">35.4 ms<" in row


def test_gate_page_reads_in_units_and_an_empty_cost_chart_says_so(
    client: Client, engineer_user: Any
) -> None:
    baseline, candidate = _run("baseline"), _run("candidate", ttft_p95_ms=3063633.0)
    names = ("metric", "baseline", "candidate", "delta_pct", "better", "passed")
    checks = [
        # (3,063,633 - 444.2928) / 444.2928 x 100 = +689,441.5 %
        ("ttft_p95_ms", 444.2928, 3063633.0, 689441.46, "lower", False),
        ("gpu_utilization_pct", 80, 85, 6.25, "higher", True),
        ("usd_per_million_tokens", "15.3675", "0.000150", -99.999, "lower", True),
        ("tpot_p95_ms", 35.37255, 35.37255, 0.0, "lower", True),
    ]
    gate = Gate.objects.create(
        baseline=baseline,
        candidate=candidate,
        baseline_sha256="a" * 64,
        candidate_sha256="b" * 64,
        inputs={"mode": "autoscale", "cold_start_seconds": 30, "traffic": "always busy"},
        verdict="fail",
        result={
            "summary": "Fail: p95 TTFT higher.",
            "checks": [dict(zip(names, c, strict=True)) for c in checks],
            "cost_by_mode": {},
        },
    )
    client.force_login(engineer_user)
    html = client.get(f"/benchmarks/gates/{gate.pk}/").content.decode()
    assert "cold start 30.0 s," in html
    ttft = _cells(html, "P95 TTFT")
    assert '<td class="num">444 ms</td><td class="num">51.1 min</td>' in ttft
    assert "+689,441.5 %" in ttft
    utilisation = _cells(html, "GPU utilization")
    assert '<td class="num">80.0 %</td><td class="num">85.0 %</td>' in utilisation
    assert "+6.3 %" in utilisation  # 6.25, half-up
    cost = _cells(html, "Cost per 1M output tokens")
    assert '<td class="num">$15.37</td><td class="num">$0.000150</td>' in cost
    assert "−100.0 %" in cost
    assert '<td class="num">0.0 %</td>' in _cells(html, "P95 TPOT")
    # No side has a cost per mode: a sentence, no chart data.
    assert "No cost per 1M output tokens: neither run states its $ per accelerator-hour" in html
    assert 'id="cost-by-mode-data"' not in html
    # A gate recorded without curves has no Pareto chart to draw: a sentence instead.
    assert 'id="pareto-data"' not in html
    assert "No point has both a p95 TPOT and a throughput per accelerator" in html


def test_metric_text_by_unit() -> None:
    from benchmarks_app.views import metric_text

    assert metric_text("ttft_p95_ms", 850) == "850 ms"
    assert metric_text("usd_per_million_tokens", "0.075") == "$0.075"
    assert metric_text("gpu_utilization_pct", 12.34) == "12.3 %"
    assert metric_text("output_tokens_per_gpu_hour", 1234567.8) == "1,234,568"
    assert metric_text("decode_tokens_per_s", 1234.56) == "1,234.6"
    assert metric_text("tokens_per_joule", 0.456) == "0.46"
    assert metric_text("ttft_p95_ms", None) == "—"
    assert metric_text("ttft_p95_ms", "n/a") == "n/a"  # shown as it is, never a 500
