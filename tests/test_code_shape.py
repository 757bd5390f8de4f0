"""The code's shape targets: no function over MAX_FUNCTION_LINES lines, a module over
MAX_MODULE_LINES lines states in its docstring the one concern it holds, and no module
docstring runs over MAX_MODULE_DOCSTRING_LINES lines."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("audit_app", "benchmarks_app", "config")
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600


def _modules() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def test_the_walk_finds_the_packages() -> None:
    names = {path.relative_to(REPO).as_posix() for path in _modules()}
    assert {"audit_app/models.py", "benchmarks_app/metrics.py", "config/urls.py"} <= names


def test_no_function_is_longer_than_the_limit() -> None:
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({lines})")
    assert not long, "split these into named steps:\n" + "\n".join(long)


def test_a_long_module_names_its_one_concern() -> None:
    unexplained = []
    for path in _modules():
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            docstring = ast.get_docstring(ast.parse(text)) or ""
            if "one concern" not in docstring.lower():
                unexplained.append(str(path.relative_to(REPO)))
    assert not unexplained, "split these or say their one concern in the docstring: " + ", ".join(
        unexplained
    )


MAX_MODULE_DOCSTRING_LINES = 20


def test_a_module_docstring_says_what_and_why_in_a_few_lines() -> None:
    # A method that needs more has its section in docs/ (formats, methods, architecture), which
    # the docstring names.
    long = []
    for path in _modules():
        docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
        lines = len(docstring.strip().splitlines())
        if lines > MAX_MODULE_DOCSTRING_LINES:
            long.append(f"{path.relative_to(REPO)} ({lines} lines)")
    assert not long, "move the method to docs/ and name it:\n" + "\n".join(long)
