"""Where the converter tests find their files.

The real samples live in the shared folder next to the repository (`/work/shared` beside
`/work/main`); a missing file fails the test that needs it, never skips it.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
REAL = (REPO / ".." / "shared" / "fixtures" / "real" / "benchmarks").resolve()
LOCAL = REPO / "tests" / "fixtures" / "benchmarks"


def real(relative: str) -> bytes:
    """The bytes of a real sample under shared/fixtures/real/benchmarks/."""
    path = REAL / relative
    assert path.is_file(), f"real fixture {path} is missing (expected ../shared beside the repo)"
    return path.read_bytes()


def local(name: str) -> bytes:
    """The bytes of a hand-written fixture under tests/fixtures/benchmarks/."""
    path = LOCAL / name
    assert path.is_file(), f"fixture {path} is missing"
    return path.read_bytes()
