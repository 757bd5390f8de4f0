"""bench/probe.py's pure parts: the CSV it writes, its percentiles, its reading of /proc, and the
section it writes (no probe is run here)."""

from __future__ import annotations

import csv
import io
from datetime import date
from pathlib import Path

from bench import probe
from bench.report import read_sections, write_section


def test_the_csv_names_one_workload_a_row_over_the_last_7_days() -> None:
    text = "".join(probe.csv_lines(10, last_day=date(2026, 11, 30), prefix="probe"))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 10
    assert [r["workload"] for r in rows] == [f"probe-{i:07d}" for i in range(10)]
    assert rows[0]["started_at"] == "2026-11-24T00:00:00Z"
    assert rows[6]["started_at"] == "2026-11-30T00:00:00Z"
    assert rows[7]["started_at"] == "2026-11-24T00:00:01Z"
    assert [r["input_tokens"] for r in rows[:2]] == ["100", "101"]
    assert rows[1]["output_tokens"] == "25"


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert probe.percentile(values, 50) == 10.0
    assert probe.percentile(values, 95) == 19.0
    assert probe.percentile([5.0], 95) == 5.0
    assert probe.percentile([], 50) == 0.0


def test_peak_rss_reads_vmrss_lines() -> None:
    texts = ["Name:\tcelery\nVmRSS:\t  204800 kB\n", "VmRSS:\t 1024 kB\n", "Name:\tzombie\n"]
    assert probe.peak_rss_kib(texts) == 204800


def test_the_section_carries_the_figures(tmp_path: Path) -> None:
    figures = probe.Figures(
        rows=1000,
        size_bytes=2 * 1024**2,
        workloads_before=12,
        workloads_after_ingest=5012,
        workloads_at_limit=20_000,
        workloads_after_delete=15_000,
        workloads_after_cleanup=12,
        fill_uploads=3,
        fill_refresh_s=30.25,
        upload_status="succeeded",
        upload_notes=["Some were folded."],
        ingest_s=3.25,
        peak_rss_kib=300 * 1024,
        timings=[
            probe.Timing(path="/", status=200, cold_ms=900, warm_ms=[10, 20, 30], size_bytes=5)
        ],
    )
    text = probe.markdown(figures, requests_each=3, when="1 Dec 2026")
    assert (
        "5,012 after the ingest, 20,000 at the limit, 15,000 after deleting the big upload "
        "(its 14,988 fill names stay), 12 after deleting the fill uploads too (back to before)"
    ) in text
    assert "took 30.2 s" in text
    assert "| `/` | 200 | 900 | 20 | 30 | 30 | 5 |" in text
    assert "peaked at 300 MiB resident" in text
    assert "- The upload's note: Some were folded." in text
    doc = tmp_path / "reliability.md"
    write_section("probe", text, path=doc)
    assert read_sections(doc.read_text())["probe"] == text
