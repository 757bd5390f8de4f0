"""`bench/live.py`'s own pieces: the spans it sends and the figures it prints (the benchmark
itself runs under `make bench`, never in the suite)."""

from __future__ import annotations

import os

from bench.live import Figures, lines, make_spans, tree_cpu_s


def test_every_span_of_every_client_has_its_own_ids_and_gen_ai_usage() -> None:
    spans = [span for client in (0, 1) for batch in make_spans(client, 2, 3) for span in batch]
    assert len(spans) == 12
    ids = {(span.context.trace_id, span.context.span_id) for span in spans}
    assert len(ids) == 12
    assert {span.attributes["gen_ai.usage.output_tokens"] for span in spans} == {100}
    assert all(span.end_time - span.start_time == 800_000_000 for span in spans)


def test_the_figures_print_rates_from_spans_and_seconds() -> None:
    figures = Figures(
        backend="PostgreSQL",
        clients=8,
        spans=100_000,
        export_s=4.0,
        failed_exports=0,
        landed_s=5.5,
        landed_requests=100_000,
        decode_spans_per_s=500_000.0,
        over_limit_status=413,
        server_cpu_us_per_span=40.0,
        worker_cpu_us_per_span=12.0,
    )
    printed = list(lines(figures))
    assert "25,000 spans/s accepted" in printed[0]  # 100,000 / 4.0
    assert "(20.0x the server's end-to-end rate)" in printed[1]
    assert "gunicorn 40 us" in printed[2] and "worker 12 us" in printed[2]
    assert "landed 100,000 of 100,000 requests, 5.5 s after" in printed[3]
    assert printed[4].endswith("answered 413 (expected 413)")


def test_cpu_of_a_process_tree_counts_this_process() -> None:
    assert tree_cpu_s(os.getpid()) > 0
