"""The front ends (pages, API, command line, admin) import nothing of one another: what two of
them share lives in a service, selector or `lib` module below them.

Every module of each front end is parsed with `ast` (nothing is imported) and each import of a
project module, at any level, is checked against the front end it belongs to.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Module-name prefixes of each front end.
FRONT_ENDS: dict[str, tuple[str, ...]] = {
    "pages": ("audit_app.views", "benchmarks_app.views", "audit_app.templatetags"),
    "api": ("audit_app.api", "benchmarks_app.api"),
    "cli": ("audit_app.management", "benchmarks_app.management"),
    "admin": ("audit_app.admin", "benchmarks_app.admin"),
}


def front_end(module: str) -> str | None:
    for name, prefixes in FRONT_ENDS.items():
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return name
    return None


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
    return found


def sideways_imports() -> list[str]:
    found = []
    for package in ("audit_app", "benchmarks_app"):
        for path in sorted((ROOT / package).rglob("*.py")):
            importer = module_name(path)
            mine = front_end(importer)
            if mine is None:
                continue
            for module, line in imported_modules(path):
                theirs = front_end(module)
                if theirs is not None and theirs != mine:
                    found.append(f"{importer}:{line} ({mine}) imports {module} ({theirs})")
    return found


def test_front_ends_do_not_import_one_another() -> None:
    assert sideways_imports() == []


def test_the_check_sees_a_sideways_import(tmp_path: Path) -> None:
    assert front_end("audit_app.views.billing") == "pages"
    assert front_end("audit_app.api.billing") == "api"
    assert front_end("audit_app.management.commands.plan") == "cli"
    assert front_end("audit_app.costs.billing") is None
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from audit_app.views.billing import x\n")
    assert imported_modules(module) == [("audit_app.views.billing", 2)]
