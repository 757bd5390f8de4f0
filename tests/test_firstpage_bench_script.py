"""`bench/firstpage.py`'s own pieces: the environment of its server and the figures it prints
(the benchmark itself runs under `make bench`, never in the suite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.firstpage import Figures, lines, section, server_env


def _figures(**overrides: float) -> Figures:
    values: dict[str, float] = {
        "first_load_ms": 850.0,
        "repeat_load_ms": 420.0,
        "healthz_ms": 2.5,
        "overview_html_ms": 170.0,
        "plotly_first_bytes": 1_233_951,
        "plotly_repeat_bytes": 0,
        "charts": 3,
        "start_s": 4.31,
    }
    values.update(overrides)
    return Figures(
        first_load_ms=values["first_load_ms"],
        repeat_load_ms=values["repeat_load_ms"],
        healthz_ms=values["healthz_ms"],
        overview_html_ms=values["overview_html_ms"],
        plotly_first_bytes=int(values["plotly_first_bytes"]),
        plotly_repeat_bytes=int(values["plotly_repeat_bytes"]),
        charts=int(values["charts"]),
        start_s=values["start_s"],
    )


def test_each_load_is_printed_beside_its_target_and_verdict() -> None:
    printed = list(lines(_figures()))
    assert printed[0] == (
        "firstpage: overview first load 850 ms (target <= 1,000 ms, met), "
        "repeat load 420 ms (target <= 300 ms, NOT met); 3 charts drawn"
    )
    # 850 / 170 = 5.0, 420 / 170 = 2.47...
    assert printed[1] == (
        "firstpage: yardstick: /healthz 2.5 ms, the overview's HTML alone 170 ms; "
        "first load = 5.0x the HTML, repeat = 2.5x"
    )
    assert printed[2] == (
        "firstpage: plotly.js over the wire 1.23 MB on the first load, 0 bytes on the repeat "
        "(0 = from the cache); server start (serve --prepare) 4.3 s"
    )


def test_a_target_is_met_at_exactly_its_figure() -> None:
    printed = list(lines(_figures(first_load_ms=1000.0, repeat_load_ms=300.0)))
    assert "first load 1,000 ms (target <= 1,000 ms, met)" in printed[0]
    assert "repeat load 300 ms (target <= 300 ms, met)" in printed[0]


def test_a_zero_yardstick_prints_no_ratio() -> None:
    printed = list(lines(_figures(overview_html_ms=0.0)))
    assert printed[1].endswith("first load = n/a the HTML, repeat = n/a")


def test_the_server_runs_as_make_run_with_no_service(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://x@127.0.0.1/y")
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:6379/3")
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "config.settings.test")
    env = server_env(tmp_path)
    assert "DATABASE_URL" not in env
    assert "CELERY_BROKER_URL" not in env
    assert "DJANGO_SETTINGS_MODULE" not in env
    assert env["DJANGO_VAR_DIR"] == str(tmp_path)
    assert env["DJANGO_DEBUG"] == "true"
    assert env["DJANGO_STATIC_MANIFEST"] == "true"


def test_the_reliability_section_tables_each_figure_beside_its_target() -> None:
    text = section(_figures())
    assert text.startswith("## First page\n")
    assert "(3 on the overview)" in text
    assert "plotly.js travelled as 1.23 MB on the first load and 0 bytes on the repeat" in text
    assert "| overview, first load (empty cache) | 850 | <= 1,000 | met |" in text
    assert "| overview, repeat load (cache warm) | 420 | <= 300 | NOT met |" in text
    assert "| yardstick: the overview's HTML alone | 170 |  |  |" in text
    assert "| yardstick: `/healthz` | 2.5 |  |  |" in text
