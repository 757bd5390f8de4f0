"""Start-up stays light: `django.setup()` and the Celery tasks module (what every manage.py
command and worker loads before doing anything) import no numpy, pandas, pyarrow or plotly.
They cost about a second of CPU to import, and only reading a file, drawing a chart or
parsing a benchmark needs them; those import them where they are used. The web worker is the
exception: `config.wsgi` loads them, the URLconf and every template before its first request,
so no visitor pays for them under load."""

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


WSGI_CHILD = """
import json, sys
import config.wsgi
from django.template import engines
from django.urls import URLResolver, get_resolver
loader = engines["django"].engine.template_loaders[0]
def resolvers(resolver):
    yield resolver
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from resolvers(pattern)
print(json.dumps({
    "modules": sorted(n for n in sys.modules if n.split(".")[0] in ("pandas", "plotly")),
    "templates": sorted(loader.get_template_cache),
    "resolvers": [(r.namespace, sorted(r._reverse_dict)) for r in resolvers(get_resolver())],
}))
"""


def _run_child(code: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO_ROOT,
        # No results-cache warm-up: it would compute over whatever database the environment
        # names (tests/audit_app/views/test_page_cache.py tests it).
        env=child_env(
            {"DJANGO_SETTINGS_MODULE": "config.settings.base", "WARM_RESULTS_ON_START": "0"}
        ),
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


def test_the_web_worker_loads_pandas_plotly_and_the_templates_before_serving() -> None:
    warmed = json.loads(_run_child(WSGI_CHILD))
    assert "pandas" in warmed["modules"]
    assert "plotly.graph_objects" in warmed["modules"]
    # Compiled into the cached loader: the overview, the login form, a partial.
    for name in ("audit/overview.html", "registration/login.html", "partials/chart.html"):
        assert name in warmed["templates"]


def test_the_web_worker_builds_every_reverse_table_before_serving() -> None:
    # Django builds them on a first reverse() and guards the build per thread: left to the
    # first requests, a burst of them on a new worker built each table once per thread.
    warmed = json.loads(_run_child(WSGI_CHILD))
    tables = dict(
        (namespace or "(root)", languages) for namespace, languages in warmed["resolvers"]
    )
    assert {"(root)", "admin"} <= set(tables)
    assert len(warmed["resolvers"]) > 2
    assert all(languages == ["en-us"] for _, languages in warmed["resolvers"])
