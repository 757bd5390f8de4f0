"""Start-up stays light: `django.setup()` and the Celery tasks module (what every manage.py
command and worker loads before doing anything) import no numpy, pandas, pyarrow or plotly.
They cost about a second of CPU to import, and only reading a file, drawing a chart or
parsing a benchmark needs them; those import them where they are used."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.processes import REPO_ROOT, child_env

HEAVY = ("numpy", "pandas", "pyarrow", "plotly")

CHILD = """
import json, sys
import django
django.setup()
import audit_app.tasks
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in sys.argv[1:])))
"""


def _run_child(code: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO_ROOT,
        env=child_env({"DJANGO_SETTINGS_MODULE": "config.settings.base"}),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return result.stdout.strip().splitlines()[-1]


def _loaded_after_setup(*names: str) -> list[str]:
    loaded: list[str] = json.loads(_run_child(CHILD, *names))
    return loaded


def test_start_up_imports_no_numpy_pandas_pyarrow_or_plotly() -> None:
    assert _loaded_after_setup(*HEAVY) == []


def test_the_check_sees_imports_at_all() -> None:
    # The same child does report a module that start-up does load: the assertion above can fail.
    assert "django.apps" in _loaded_after_setup("django")
