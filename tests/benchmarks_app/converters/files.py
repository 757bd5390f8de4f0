"""Where the converter tests find their files.

The real samples are copied into the repository under `tests/fixtures/real/benchmarks/` (their
sources and licences are in `tests/fixtures/real/README.md`); a missing file fails the test that
needs it, never skips it.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
REAL = REPO / "tests" / "fixtures" / "real" / "benchmarks"
LOCAL = REPO / "tests" / "fixtures" / "benchmarks"
# The real telemetry sample: accelerator telemetry, not load points (test_telemetry.py reads it).
NEURON_MONITOR_REAL = "telemetry/neuron-monitor_trn1.2xlarge_wandb_3_reports.jsonl"


def real(relative: str) -> bytes:
    """The bytes of a real sample under tests/fixtures/real/benchmarks/."""
    path = REAL / relative
    assert path.is_file(), f"real fixture {path} is missing"
    return path.read_bytes()


def local(name: str) -> bytes:
    """The bytes of a hand-written fixture under tests/fixtures/benchmarks/."""
    path = LOCAL / name
    assert path.is_file(), f"fixture {path} is missing"
    return path.read_bytes()
