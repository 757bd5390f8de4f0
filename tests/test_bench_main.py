"""`make bench` (`python -m bench`) imports every benchmark module: a name one of them imports
from another must exist, or `make bench` fails before it measures anything."""

from __future__ import annotations

import importlib


def test_every_benchmark_module_imports_and_has_run() -> None:
    main = importlib.import_module("bench.__main__")
    names = [module.__name__.rsplit(".", 1)[-1] for module in main.BENCHMARKS]
    assert {"ingest", "json_ingest", "firstpage", "live"} <= set(names)
    assert all(callable(module.run) for module in main.BENCHMARKS)


def test_sections_go_to_their_page_and_keep_its_text_above(tmp_path: object) -> None:
    from pathlib import Path

    from bench import report

    assert report.page_of("load") == report.PERFORMANCE
    assert report.page_of("faults") == report.RELIABILITY
    page = Path(str(tmp_path)) / "performance.md"
    page.write_text("# Performance\n\nHand-written intro.\n\n", encoding="utf-8")
    report.write_section("load", "## Load\n\nfirst\n", path=page)
    report.write_section("scale", "## Scale\n\nsecond\n", path=page)
    report.write_section("load", "## Load\n\nthird\n", path=page)
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Performance\n\nHand-written intro.\n")
    assert report.read_sections(text) == {
        "load": "## Load\n\nthird\n",
        "scale": "## Scale\n\nsecond\n",
    }
    # A page the report does not know keeps its sections in alphabetical order.
    assert text.index("section:load") < text.index("section:scale")
