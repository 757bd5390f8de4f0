"""`make bench` (`python -m bench`) imports every benchmark module: a name one of them imports
from another must exist, or `make bench` fails before it measures anything."""

from __future__ import annotations

import importlib


def test_every_benchmark_module_imports_and_has_run() -> None:
    main = importlib.import_module("bench.__main__")
    names = [module.__name__.rsplit(".", 1)[-1] for module in main.BENCHMARKS]
    assert {"ingest", "json_ingest", "firstpage", "live"} <= set(names)
    assert all(callable(module.run) for module in main.BENCHMARKS)
