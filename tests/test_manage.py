"""`manage.py` itself: a failing command exits with its error and status."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.processes import run_manage


def test_a_failing_command_still_exits_with_its_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    result = run_manage("ingest", str(missing), env={**os.environ, "DJANGO_VAR_DIR": str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr.strip() == f"CommandError: {missing}: no such file"
