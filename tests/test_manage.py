"""`manage.py` itself: a command's objects are frozen as the process ends, so the collections
the interpreter runs on its way out skip them; a failing command still fails as before."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.support.processes import run_manage

# Printed by an exit handler, after the command has returned: exit handlers run before the
# interpreter's last collections.
AT_EXIT = (
    "import atexit, gc, json; "
    "atexit.register(lambda: print(json.dumps({'frozen': gc.get_freeze_count()})))"
)


def _manage(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return run_manage(*args, env={**os.environ, "DJANGO_VAR_DIR": str(tmp_path)})


def test_a_command_s_objects_are_frozen_when_it_has_returned(tmp_path: Path) -> None:
    result = _manage("shell", "--no-imports", "-c", AT_EXIT, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    frozen = json.loads(result.stdout.strip().splitlines()[-1])["frozen"]
    # Django and its settings loaded: tens of thousands of objects (none without the freeze).
    assert frozen > 10_000


def test_a_failing_command_still_exits_with_its_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    result = _manage("ingest", str(missing), tmp_path=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == f"CommandError: {missing}: no such file"
