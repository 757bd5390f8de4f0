"""`make bench`: prints each benchmark's figures."""

from __future__ import annotations

from bench import classification, fanout, gate, histograms, ingest, scale

BENCHMARKS = [classification, gate, histograms, ingest, fanout, scale]


def main() -> None:
    for module in BENCHMARKS:
        for line in module.run():
            print(line)


if __name__ == "__main__":
    main()
