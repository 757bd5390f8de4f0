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


HEADER = (
    '"request_id","call_type","api_key","spend","total_tokens","prompt_tokens",'
    '"completion_tokens","startTime","endTime","request_duration_ms","completionStartTime",'
    '"model","model_group","custom_llm_provider","user","metadata","request_tags","team_id",'
    '"end_user","status"'
)


def _row(request_id: str, prompt_tokens: str, cached: int, second: int) -> str:
    metadata = (
        '"{""user_api_key_alias"": ""bot"", ""usage_object"": {""prompt_tokens_details"": '
        f'{{""cached_tokens"": {cached}}}}}}}"'
    )
    return (
        f'"{request_id}","acompletion","k1",0.001,110,{prompt_tokens},10,'
        f'"2025-03-03T00:00:{second:02d}.000001Z","2025-03-03T00:00:{second + 1:02d}.000001Z",'
        f'1000,"2025-03-03T00:00:{second + 1:02d}.000001Z","gpt-4o-mini","gpt-4o-mini",'
        f'"openai","",{metadata},"[""workload:bot""]","team-a","user-{second}","success"'
    )


def test_duckdb_checked_groups_metadata_by_shape_and_keeps_unvouched_rows_apart(
    tmp_path: Path,
) -> None:
    from bench.ingest import CHILD_DUCKDB_CHECKED, run_child

    export = tmp_path / "export.csv"
    rows = [
        _row("a", "100", 40, 1),  # the same shape as the next row: only the cached count differs
        _row("b", "100", 75, 2),
        _row("c", "1e2", 40, 3),  # a token count the fast path does not vouch for
    ]
    export.write_text("\n".join([HEADER, *rows]) + "\n")
    printed = run_child(CHILD_DUCKDB_CHECKED, str(export), env=dict(os.environ))
    assert (printed["rows"], printed["groups"]) == (3, 2)


def test_store_child_times_the_app_s_copy_and_removes_it(tmp_path: Path) -> None:
    from bench.ingest import CHILD_STORE, run_child

    source = tmp_path / "source.bin"
    source.write_bytes(b"0123456789" * 100_000)
    copy = tmp_path / "copy.bin"
    printed = run_child(CHILD_STORE, str(source), str(copy), env=dict(os.environ))
    assert printed["bytes"] == 1_000_000
    assert printed["seconds"] > 0
    assert not copy.exists()


def test_head_is_the_header_and_first_rows(tmp_path: Path) -> None:
    from bench.ingest import _head

    export = tmp_path / "litellm-5.csv"
    export.write_text("h1,h2\n1,a\n2,b\n3,c\n4,d\n5,e\n")
    head = _head(export, 3)
    assert head.name == "litellm-5-head3.csv"
    assert head.read_text() == "h1,h2\n1,a\n2,b\n3,c\n"


def test_floor_lines_put_the_fixed_steps_and_checked_duckdb_beside_the_allowance() -> None:
    from bench.ingest import _floor_lines

    measured = {
        "duck": {"seconds": 1.25},
        "head": {"seconds": 1.5},
        "store": {"seconds": 0.5},
        "checked": {"seconds": 2.5, "cpu_s": 4.75},
    }
    fixed, checked = _floor_lines(measured)
    # 1.5 + 0.5 = 2.0 s of fixed steps = 1.6x DuckDB's 1.25 s; 2x allows 2.5 s.
    assert "1.50 s + storing the whole file (copy and SHA-256) 0.50 s = 2.00 s = 1.60x" in fixed
    assert "against the 2.50 s the target allows" in fixed
    # 2.5 s = 2.00x; with the fixed steps (2.5 + 2.0) / 1.25 = 3.60x.
    assert "2.50 s = 2.00x DuckDB (CPU 4.75 s); with the fixed steps 3.60x" in checked
