"""`make bench` (ingest): a child's peak memory is its own, not the benchmark's. On Linux a
child's ru_maxrss starts from its parent's peak at the fork, so the benchmark, which holds
the generated exports, reported that for every `manage.py ingest` it ran."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.ingest import PEAK_WRAPPER

MIB = 1024 * 1024
SCRIPT = """
import sys
held = bytearray(int(sys.argv[1]) * 1024 * 1024)
for page in range(0, len(held), 4096):
    held[page] = 1
"""


def test_the_peak_is_the_child_s_own(tmp_path: Path) -> None:
    script = tmp_path / "allocate.py"
    script.write_text(SCRIPT)
    peak = tmp_path / "peak"
    parent_ballast = bytearray(600 * MIB)  # the benchmark holding its exports
    for page in range(0, len(parent_ballast), 4096):
        parent_ballast[page] = 1
    process = subprocess.Popen(
        [sys.executable, "-c", PEAK_WRAPPER, str(peak), str(script), "150"],
        stdout=subprocess.DEVNULL,
    )
    # (os.wait4's ru_maxrss for this child reads 600 MiB or more on Linux 6.)
    _, status, _ = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    del parent_ballast
    own_mib = int(peak.read_text()) / 1024
    # The script's 150 MiB, plus the interpreter's own few tens of MiB.
    assert 150 <= own_mib < 150 + 80
