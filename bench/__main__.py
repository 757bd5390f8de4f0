"""`make bench`: prints each benchmark's figures. `python -m bench gate ingest` runs only those."""

from __future__ import annotations

import sys

from bench import (
    classification,
    fanout,
    firstpage,
    firststart,
    forecast,
    gate,
    histograms,
    ingest,
    json_ingest,
    live,
    scale,
)

BENCHMARKS = [
    classification,
    forecast,
    gate,
    histograms,
    ingest,
    json_ingest,
    fanout,
    scale,
    live,
    firstpage,
    firststart,
]


def main(names: list[str]) -> None:
    by_name = {module.__name__.rsplit(".", 1)[-1]: module for module in BENCHMARKS}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        sys.exit(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(by_name)}")
    for module in [by_name[name] for name in names] or BENCHMARKS:
        for line in module.run():
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
