"""bench/load.py's reading of locust's CSV files and its PASS/FAIL rule (no load is run here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import load
from bench.report import read_sections, write_section

# Written by hand in the shape of locust 2.x `--csv` output (the columns it writes).
STATS_CSV = """\
Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,\
Min Response Time,Max Response Time,Average Content Size,Requests/s,Failures/s,\
50%,66%,75%,80%,90%,95%,98%,99%,99.9%,99.99%,100%
GET,/,10,0,120,130.5,80.1,410.9,46000,0.5,0.0,\
120,130,140,150,200,400,410,410,410,410,410
GET,/api/v1/spend/?group_by=[g],4,1,35,40.0,20.0,95.2,2000,0.2,0.05,\
35,40,40,95,95,95,95,95,95,95,95
POST,login (POST),0,0,0,0,0,0,0,0.0,0.0,\
N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A
,Aggregated,14,1,100,105.0,20.0,410.9,33428.6,0.7,0.05,\
100,120,130,140,200,400,410,410,410,410,410
"""

FAILURES_CSV = """\
Method,Name,Error,Occurrences,First Seen,Last Seen
GET,/api/v1/spend/?group_by=[g],HTTP 503,1,1700000000,1700000000
GET,/workloads/,HTTP 302 -> /accounts/login/?next=/workloads/,2,1700000000,1700000001
GET,/,ConnectionRefusedError(111),3,1700000000,1700000002
"""

EXCEPTIONS_CSV = """\
Count,Message,Traceback,Nodes
2,KeyError('token'),"Traceback ...",local
1,ZeroDivisionError,"Traceback ...",local
"""


def test_parse_stats_reads_rows_and_the_aggregated_total() -> None:
    rows, total = load.parse_stats(STATS_CSV)
    assert [(r.method, r.name) for r in rows] == [
        ("GET", "/"),
        ("GET", "/api/v1/spend/?group_by=[g]"),
        ("POST", "login (POST)"),
    ]
    home = rows[0]
    assert (home.requests, home.failures) == (10, 0)
    assert (home.p50_ms, home.p95_ms, home.max_ms, home.rps) == (120.0, 400.0, 410.9, 0.5)
    spend = rows[1]
    assert (spend.requests, spend.failures, spend.p50_ms, spend.p95_ms) == (4, 1, 35.0, 95.0)
    login = rows[2]
    assert login.p50_ms is None and login.p95_ms is None  # "N/A": no request made
    assert total is not None
    assert (total.requests, total.failures, total.p50_ms, total.p95_ms) == (14, 1, 100.0, 400.0)
    assert total.rps == 0.7


def test_parse_failures_reads_the_status_from_the_message() -> None:
    failures = load.parse_failures(FAILURES_CSV)
    assert [(f.name, f.occurrences, f.status) for f in failures] == [
        ("/api/v1/spend/?group_by=[g]", 1, 503),
        ("/workloads/", 2, 302),
        ("/", 3, None),
    ]


def test_parse_exceptions_adds_the_counts() -> None:
    assert load.parse_exceptions(EXCEPTIONS_CSV) == 3
    assert load.parse_exceptions("Count,Message,Traceback,Nodes\n") == 0


def test_verdict_passes_only_a_clean_run() -> None:
    rows, total = load.parse_stats(STATS_CSV)
    clean_rows = [r for r in rows if r.failures == 0]
    clean_total = load.EndpointStats("", "Aggregated", 10, 0, 120.0, 400.0, 410.9, 0.5)
    assert load.verdict(clean_rows, clean_total, []) == load.Verdict(passed=True, reasons=[])

    result = load.verdict(rows, total, load.parse_failures(FAILURES_CSV), exceptions=3)
    assert not result.passed
    assert result.reasons == [
        "1 of 14 requests failed",
        "1 answers were 5xx",
        "the locustfile raised 3 exceptions",
    ]


def test_verdict_without_a_total_sums_the_rows_and_fails_an_empty_run() -> None:
    rows, _ = load.parse_stats(STATS_CSV)
    assert load.verdict(rows, None, []).reasons == ["1 of 14 requests failed"]
    assert load.verdict([], None, []).reasons == ["no request was made"]


def test_a_5xx_alone_fails_even_if_locust_counted_no_failure() -> None:
    rows, _ = load.parse_stats(STATS_CSV)
    clean = [r for r in rows if r.failures == 0]
    failures = [load.FailureRow("GET", "/", "HTTP 500", 2)]
    assert load.verdict(clean, None, failures).reasons == ["2 answers were 5xx"]


# What the locustfile writes when locust quits: sums of the Server-Timing figures per endpoint,
# and the response times of the requests sent after the first 10 s.
TIMING_JSON = """[
 {"method": "GET", "name": "/", "answers": 10, "cpu_ms": 412.0, "db_ms": 50.0, "queries": 45,
  "counted_ms": [90, 20, 30, 40, 50, 60, 70, 80, 10, 100, 110, 120, 130, 140, 150, 160,
                 170, 180, 190, 200, 999]},
 {"method": "GET", "name": "/api/v1/spend/?group_by=[g]", "answers": 4, "cpu_ms": 30.0,
  "db_ms": 8.0, "queries": 12, "counted_ms": [35.0]},
 {"method": "POST", "name": "login (POST)", "answers": 0, "cpu_ms": 0, "db_ms": 0, "queries": 0,
  "counted_ms": [4000.0]}
]"""


def test_table_rows_are_sorted_and_end_with_the_total() -> None:
    rows, total = load.parse_stats(STATS_CSV)
    table = load.table_rows(rows, total, load.parse_timing(TIMING_JSON))
    # cpu ms: 412 / 10 = 41.2 and 30 / 4 = 7.5; queries 45 / 10 = 4.5 and 12 / 4 = 3.0; the
    # total over all 14 answers: 442 / 14 = 31.57 ms and 57 / 14 = 4.07 queries. The sign-in
    # POST sent no header: "-". p95 counted, nearest rank: of /'s 21 times, the
    # ceil(0.95 * 21) = 20th smallest, 200 ms; spend's one time, 35 ms; the sign-in's one,
    # 4000 ms; of all 23, the 22nd (ceil(21.85)), 999 ms.
    assert table == [
        ["GET /", "10", "0", "120", "400", "411", "0.50", "41.2", "4.5", "200"],
        ["GET /api/v1/spend/?group_by=[g]", "4", "1", "35", "95", "95", "0.20", "7.5", "3.0"]
        + ["35"],
        ["POST login (POST)", "0", "0", "-", "-", "0", "0.00", "-", "-", "4000"],
        ["total", "14", "1", "100", "400", "411", "0.70", "31.6", "4.1", "999"],
    ]
    text = load.text_table(table).splitlines()
    assert text[0].split() == ["endpoint", "requests", "failures", "p50", "ms", "p95", "ms"] + [
        "max",
        "ms",
        "req/s",
        "cpu",
        "ms",
        "queries",
        "p95",
        "counted",
    ]
    assert text[-1].split() == [
        "total",
        "14",
        "1",
        "100",
        "400",
        "411",
        "0.70",
        "31.6",
        "4.1",
        "999",
    ]
    assert len({len(line) for line in text}) == 1  # columns line up


def test_table_rows_without_timing_show_dashes() -> None:
    rows, total = load.parse_stats(STATS_CSV)
    assert load.table_rows(rows, total)[0][-3:] == ["-", "-", "-"]


def test_the_target_counts_after_the_skip_and_leaves_the_sign_in_out() -> None:
    timing = load.parse_timing(TIMING_JSON)
    # Counted p95: / 200 ms, spend 35 ms; the sign-in POST's 4000 ms is not a page or API call.
    result = load.target(timing, skip_s=10)
    assert result.p95 == [("GET /", 200.0), ("GET /api/v1/spend/?group_by=[g]", 35.0)]
    assert result.met
    assert load.target_line(result) == (
        "Target: every page and API p95 <= 300 ms after the first 10 s (sign-in POSTs aside): "
        "highest p95 200 ms (GET /): MET"
    )
    # One more slow answer on / makes its 21st of 22 times the p95: 999 ms, over.
    slow = dict(timing)
    home = timing[("GET", "/")]
    slow[("GET", "/")] = load.EndpointTiming(
        answers=home.answers,
        cpu_ms=home.cpu_ms,
        db_ms=home.db_ms,
        queries=home.queries,
        counted_ms=(*home.counted_ms, 998.0),
    )
    missed = load.target(slow, skip_s=10)
    assert not missed.met
    assert load.target_line(missed) == (
        "Target: every page and API p95 <= 300 ms after the first 10 s (sign-in POSTs aside): "
        "highest p95 998 ms (GET /): NOT MET (1 over: GET / 998 ms)"
    )


def test_the_target_is_not_met_without_a_counted_request() -> None:
    nothing = load.EndpointTiming(answers=3, cpu_ms=1.0, db_ms=1.0, queries=3)
    result = load.target({("GET", "/"): nothing}, skip_s=10)
    assert not result.met
    assert load.target_line(result).endswith(": NOT MET (no request counted)")


def test_markdown_section_names_the_command_and_the_setup(tmp_path: Path) -> None:
    rows, total = load.parse_stats(STATS_CSV)
    failures = load.parse_failures(FAILURES_CSV)
    result = load.verdict(rows, total, failures)
    body = load.markdown(
        load.Config(),
        load.table_rows(rows, total),
        load.target_line(load.target(load.parse_timing(TIMING_JSON), skip_s=10)),
        result,
        {"requests": 117_815, "workloads": 13},
        failures,
        load.CpuUse(machine=1.9, gunicorn=1.2, locust=0.1),
    )
    assert body.startswith("## Load\n")
    assert "`make load`" in body
    assert "2 workers x 4 threads (gthread) (`config.gunicorn_conf`)" in body
    assert "50 users" in body and "60 s" in body and "after the first 10 s" in body
    assert "117,815 requests" in body
    assert "| total | 14 | 1 | 100 | 400 | 411 | 0.70 | - | - | - |" in body
    assert "highest p95 200 ms (GET /): MET." in body
    assert "**FAIL** (1 of 14 requests failed; 1 answers were 5xx)" in body
    assert "other process 0.60" in body
    doc = tmp_path / "reliability.md"
    write_section("load", body, path=doc)
    assert read_sections(doc.read_text())["load"] == body


@pytest.mark.parametrize(("text", "seconds"), [("60s", 60), ("90", 90), ("2m", 120)])
def test_run_time(text: str, seconds: int) -> None:
    assert load._seconds(text) == seconds


def test_the_redis_database_is_a_knob(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOAD_REDIS_DB", "13")
    config = load.Config.from_env()
    env = load._server_env(config)
    assert env["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/13"
    assert env["DJANGO_SERVER_TIMING"] == "true"
    monkeypatch.delenv("LOAD_REDIS_DB")
    assert load._server_env(load.Config.from_env())["CELERY_BROKER_URL"].endswith("/6")


def test_the_server_is_the_recommended_one_unless_a_knob_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from config import gunicorn_conf

    config = load.Config.from_env()
    assert (config.workers, config.threads, config.worker_class) == (
        gunicorn_conf.workers,
        gunicorn_conf.threads,
        gunicorn_conf.worker_class,
    )
    command = load._gunicorn_command(config, 8123)
    assert command[command.index("--config") + 1] == "python:config.gunicorn_conf"
    assert command[command.index("--bind") + 1] == "127.0.0.1:8123"
    monkeypatch.setenv("LOAD_WORKERS", "5")
    monkeypatch.setenv("LOAD_WORKER_CLASS", "sync")
    monkeypatch.setenv("LOAD_SKIP", "15s")
    changed = load.Config.from_env()
    assert (changed.workers, changed.worker_class, changed.skip_s) == (5, "sync", 15)
    assert changed.server_label == "5 sync workers"
    command = load._gunicorn_command(changed, 8123)
    assert command[command.index("--worker-class") + 1] == "sync"
