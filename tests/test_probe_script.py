"""bench/probe.py's and bench/probe_hostile.py's pure parts: the CSV it writes, its
percentiles, its reading of /proc, its options, the hostile cases, how an answer is read and
judged, and the section it writes (no probe is run here)."""

from __future__ import annotations

import csv
import io
import json
from datetime import date
from pathlib import Path

from bench import probe, probe_hostile
from bench.probe_hostile import Answer
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
    text = probe.markdown(figures, requests_each=3)
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


def test_rows_come_from_the_command_line_before_the_environment() -> None:
    env = {"PROBE_ROWS": "70000", "PROBE_DATABASE": "probe2", "PROBE_NO_DOC": "1"}
    assert probe.Config.from_env(["--rows", "50000"], env) == probe.Config(
        rows=50_000, requests_each=20, database="probe2", write_doc=False
    )
    assert probe.Config.from_env([], env).rows == 70_000
    assert probe.Config.from_env([], {}) == probe.Config()


def test_the_parameter_cases_cover_each_parameter_on_a_page_and_an_api() -> None:
    cases = probe_hostile.PARAMETER_CASES
    assert {c.expected for c in cases} == {(400,)}
    assert {c.method for c in cases} == {"GET"}
    for value in ("end=0001-01-01", "end=9999-12-31"):
        assert {c.path.split("?")[0] for c in cases if c.path.endswith(value)} == {
            "/",
            "/spend.csv",
            "/api/v1/spend/",
        }
    for name in ("team", "provider", "model", "action"):
        paths = [c.path for c in cases if f"?{name}=%00" in c.path]
        assert len(paths) == 2
        assert sum(p.startswith("/api/") for p in paths) == 1
    assert [(c.path, c.role) for c in cases if "action" in c.path] == [
        ("/audit/?action=%00", "admin"),
        ("/api/v1/audit-events/?action=%00", "admin-api"),
    ]
    assert [c.path for c in cases if "threshold" in c.path] == [
        "/reconciliation/?threshold=1e308",
        "/api/v1/reconciliation/?threshold=1e308",
    ]


def test_the_access_cases_refuse_the_schema_and_docs_without_a_role() -> None:
    assert [(c.path, c.role, c.expected) for c in probe_hostile.ACCESS_CASES] == [
        ("/api/schema/", "no-role", (403,)),
        ("/api/schema/", "anonymous", (401, 302)),
        ("/api/docs/", "no-role", (403,)),
        ("/api/docs/", "anonymous", (401, 302)),
    ]


def _answer(status: int, *, expected: tuple[int, ...] = (400,), problem: str = "") -> Answer:
    case = probe_hostile.Case(
        area="parameters",
        what="NUL | byte",
        method="GET",
        path="/?team=%00",
        role="finops",
        expected=expected,
    )
    return Answer(case=case, status=status, message="team: refused", problem=problem)


def test_an_answer_passes_only_with_its_expected_status_and_no_problem() -> None:
    assert _answer(400).passed
    assert not _answer(200).passed
    assert not _answer(500, expected=(500,)).passed
    assert not _answer(400, problem="the raw link is in the chart data").passed
    assert not _answer(0).passed


def test_error_messages_read_json_pages_and_text() -> None:
    assert (
        probe_hostile.error_message("application/json", '{"detail": "end: 9999-12-31 is late"}')
        == "end: 9999-12-31 is late"
    )
    assert (
        probe_hostile.error_message("application/json", '{"team": ["a NUL byte"]}')
        == "team: a NUL byte"
    )
    page = '<title>Spend</title><p class="error" role="alert">team: a &lt;NUL&gt; byte</p>'
    assert probe_hostile.error_message("text/html; charset=utf-8", page) == "team: a <NUL> byte"
    assert probe_hostile.error_message("text/html", "<title>\n Sign in\n</title>") == "Sign in"
    long = "x" * 100
    assert probe_hostile.error_message("text/plain", long) == "x" * 79 + "…"


def _page(label: str) -> str:
    figure = json.dumps({"data": [{"y": [label]}]}).replace("<", "\\u003C")
    return f'<div></div><script id="top-data" type="application/json">{figure}</script>'


def test_the_chart_check_wants_the_escaped_label_and_never_the_raw_link() -> None:
    escaped = "&lt;a href=&#34;https://evil.example/phish&#34;&gt;CLICK-ME&lt;/a&gt;"
    assert probe_hostile.chart_label_problem(_page(escaped)) == ""
    assert (
        probe_hostile.chart_label_problem(_page(probe_hostile.EVIL_WORKLOAD))
        == "the raw link is in the chart data"
    )
    assert (
        probe_hostile.chart_label_problem(_page("CLICK-ME"))
        == "the escaped label is not in the chart data"
    )
    assert probe_hostile.chart_label_problem("<p>no chart</p>") == "no chart data in the page"


def test_the_hostile_table_and_the_result(tmp_path: Path) -> None:
    figures = probe.Figures(rows=10, workloads_before=12, workloads_after_cleanup=12)
    figures.hostile = [_answer(400)]
    text = probe.markdown(figures, requests_each=3)
    assert "1 of 1 passed." in text
    assert (
        "| parameters | NUL \\| byte | GET | `/?team=%00` | finops | 400 | 400 "
        "| team: refused | PASS |"
    ) in text
    assert text.endswith("\nResult: PASS\n")
    figures.hostile = [_answer(400), _answer(500, problem="")]
    text = probe.markdown(figures, requests_each=3)
    assert (
        "| parameters | NUL \\| byte | GET | `/?team=%00` | finops | 400 | 500 "
        "| team: refused | FAIL |" in (text)
    )
    assert text.endswith("\nResult: FAIL (1 hostile request(s) not answered as expected)\n")
    assert probe.failures(figures) == ["1 hostile request(s) not answered as expected"]


class _Reply:
    def __init__(self, body: object) -> None:
        self.body = body

    def json(self) -> object:
        if isinstance(self.body, str):
            raise ValueError(self.body)
        return self.body


def test_a_poison_refusal_is_one_refused_record_naming_its_field() -> None:
    otlp = {"partialSuccess": {"rejectedSpans": 1, "errorMessage": "`caller` contains a NUL"}}
    assert probe_hostile.refusal_problem("otlp", _Reply(otlp), field="caller", says="NUL") == ""
    assert (
        probe_hostile.refusal_problem("otlp", _Reply({}), field="caller", says="NUL")
        == "refused 0 records, not 1"
    )
    litellm = {"rejected": 1, "rejects": [{"field": "request_id", "reason": "a lone surrogate"}]}
    assert (
        probe_hostile.refusal_problem(
            "litellm", _Reply(litellm), field="request_id", says="lone surrogate"
        )
        == ""
    )
    assert probe_hostile.refusal_problem("litellm", _Reply(litellm), field="model", says="NUL") == (
        "the answer does not name 'model' with 'NUL'"
    )
    assert (
        probe_hostile.refusal_problem("otlp", _Reply("<html>"), field="x", says="y")
        == "the answer is not JSON"
    )


def test_the_poison_bodies_carry_the_text_escaped_as_json_writers_do() -> None:
    body = probe_hostile.otlp_span_body(
        "9001", start_ns=10**18, change={"service.name": probe_hostile.NUL, "user.id": "u"}
    )
    assert b"probe\\u0000nul" in body
    document = json.loads(body)
    resource = document["resourceSpans"][0]["resource"]["attributes"]
    assert resource == [{"key": "service.name", "value": {"stringValue": "probe\x00nul"}}]
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert (span["traceId"], span["spanId"]) == ("0" * 28 + "9001", "0" * 12 + "9001")
    assert {"key": "user.id", "value": {"stringValue": "u"}} in span["attributes"]
    call = json.loads(
        probe_hostile.litellm_call_body(
            "c-1", start_s=1.5, change={"workload": probe_hostile.SURROGATE}
        )
    )
    assert call[0]["metadata"] == {"spend_logs_metadata": {"workload": "probe\ud800surrogate"}}
    assert len(probe_hostile.POISON_VARIANTS) == 9
    assert probe_hostile.slack_text_problem() == ""
