"""`make bench`: prints each benchmark's figures."""

from __future__ import annotations

from bench import classification, gate, histograms, ingest

BENCHMARKS = [classification, gate, histograms, ingest]


def main() -> None:
    for module in BENCHMARKS:
        for line in module.run():
            print(line)


if __name__ == "__main__":
    main()
