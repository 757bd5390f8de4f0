"""The project's import graph: no cycle among its modules, no private name crossing a module.

Every module under `audit_app`, `benchmarks_app` and `config` is parsed with `ast` (nothing is
imported). Each `import` / `from ... import` of a project module is collected, relative ones
resolved against the importing module's package:

- a **module-level** import (anywhere but inside a function, and not under `if TYPE_CHECKING:`)
  runs when the module loads, so a cycle of them is an import cycle;
- an import anywhere, module- or function-level, of a name starting with `_` from another
  project module, and an attribute `module._name` read through an imported project module, is
  a private name crossing modules.

Both lists below name what is still known to break these rules outside the importers, billing,
format and upload modules (which have none); they are to break in issue 14 and may only shrink:
an entry that no longer occurs fails the test too, so it is removed when its cause is fixed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audit_app", "benchmarks_app", "config")

# Module-level import cycles still known, each as the set of modules of its strongly connected
# component: none. Imports inside functions are not counted (they do not run at load time);
# counting them too, the one loop left is Celery's: a service enqueues a task (ingest's
# fan-out, the derived refresh, the requeue sweep) and the task's body calls the service. The
# ingest service no longer imports the fan-out (the task offers the file to it first), and the
# results cache no longer imports the refresh.
KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()
# Private names still used across modules, as (importing module, imported module, name): none
# is left; a new one fails the test.
KNOWN_PRIVATE_IMPORTS: frozenset[tuple[str, str, str]] = frozenset()


@dataclass(frozen=True, kw_only=True)
class Import:
    """One project module imported by another, with the names taken from it."""

    importer: str
    module: str
    names: tuple[str, ...]
    module_level: bool
    line: int


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(
    node: ast.AST, *, module_level: bool
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement under `node`, and whether it runs when the module loads."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, module_level
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _import_nodes(child, module_level=False)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for statement in child.body:
                yield from _import_nodes(ast.Module(body=[statement]), module_level=False)
            for statement in child.orelse:
                yield from _import_nodes(ast.Module(body=[statement]), module_level=module_level)
        else:
            yield from _import_nodes(child, module_level=module_level)


def _resolve_from(importer: str, *, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(importer: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The project modules `importer` imports. `from package import submodule` imports the
    submodule; `from module import name` imports `module`, taking `name` from it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node, module_level in _import_nodes(tree, module_level=True):
        if isinstance(node, ast.Import):
            found.extend(
                Import(
                    importer=importer,
                    module=alias.name,
                    names=(),
                    module_level=module_level,
                    line=node.lineno,
                )
                for alias in node.names
                if alias.name in modules
            )
            continue
        source = _resolve_from(importer, is_package=is_package, node=node)
        names: list[str] = []
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            if submodule in modules:
                found.append(
                    Import(
                        importer=importer,
                        module=submodule,
                        names=(),
                        module_level=module_level,
                        line=node.lineno,
                    )
                )
                if alias.name.startswith("_"):
                    names.append(alias.name)  # a private module is a private name too
            else:
                names.append(alias.name)
        if source in modules and names:
            found.append(
                Import(
                    importer=importer,
                    module=source,
                    names=tuple(names),
                    module_level=module_level,
                    line=node.lineno,
                )
            )
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _dotted(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else [*inner, node.attr]
    return None


def private_attribute_reads(
    importer: str, path: Path, modules: dict[str, Path]
) -> Iterator[tuple[str, str]]:
    """(module, name) for every `module._name` read through a name bound to a project module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    bound: dict[str, str] = {}
    for node, _ in _import_nodes(tree, module_level=True):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = top
        else:
            source = _resolve_from(importer, is_package=is_package, node=node)
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        dotted = _dotted(node.value)
        if dotted is None or dotted[0] not in bound:
            continue
        module = ".".join([bound[dotted[0]], *dotted[1:]])
        if module in modules and module != importer:
            yield module, node.attr


@cache
def import_graph() -> tuple[dict[str, set[str]], list[Import], set[tuple[str, str, str]]]:
    """Module-level edges, every import, and every private name crossing modules."""
    modules = project_modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    everything: list[Import] = []
    private: set[tuple[str, str, str]] = set()
    for importer, path in modules.items():
        for found in imports_of(importer, path, modules):
            everything.append(found)
            if found.module == importer:
                continue
            if found.module_level:
                edges[importer].add(found.module)
            private.update(
                (importer, found.module, name) for name in found.names if _is_private(name)
            )
        private.update(
            (importer, module, name)
            for module, name in private_attribute_reads(importer, path, modules)
        )
    return edges, everything, private


def strongly_connected(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """Tarjan's strongly connected components of more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges[node]:
                components.append(frozenset(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return components


def cycle_path(component: frozenset[str], edges: dict[str, set[str]]) -> list[str]:
    """One cycle through the component's first module, as the modules along it."""
    start = min(component)
    parents: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(edges[node] & component):
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(parents[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if target not in parents:
                parents[target] = node
                queue.append(target)
    raise AssertionError(f"no cycle through {start}")


def test_the_walk_finds_the_project_and_its_imports() -> None:
    """A walk that found nothing would pass everything: check it sees known edges."""
    edges, everything, _ = import_graph()
    assert "audit_app.ingestion.token_logs.litellm_fields" in edges
    assert (
        "audit_app.ingestion.token_logs.litellm_fields"
        in edges["audit_app.ingestion.token_logs.litellm"]
    )
    assert (
        "audit_app.ingestion.token_logs.litellm_fields"
        in edges["audit_app.ingestion.token_logs.litellm_columnar"]
    )
    assert "audit_app.ingestion.reading" in edges["audit_app.ingestion.billing_exports.base"]
    assert any(
        found.importer == "audit_app.ingestion.token_logs.columnar_blocks"
        and found.module == "audit_app.ingestion.reading"
        and "missing_message" in found.names
        for found in everything
    )


def test_no_import_cycle_among_project_modules() -> None:
    edges, _, _ = import_graph()
    components = strongly_connected(edges)
    new = [
        " -> ".join(cycle_path(component, edges))
        for component in components
        if component not in KNOWN_CYCLES
    ]
    assert not new, "import cycles (module-level imports):\n" + "\n".join(new)
    stale = [sorted(known) for known in KNOWN_CYCLES if known not in components]
    assert not stale, f"no longer cycles; remove them from KNOWN_CYCLES: {stale}"


def test_no_private_name_imported_across_modules() -> None:
    _, _, private = import_graph()
    new = sorted(private - KNOWN_PRIVATE_IMPORTS)
    assert not new, "private names used across modules (importer, module, name):\n" + "\n".join(
        map(str, new)
    )
    stale = sorted(KNOWN_PRIVATE_IMPORTS - private)
    assert not stale, f"no longer imported; remove them from KNOWN_PRIVATE_IMPORTS: {stale}"


def test_cycle_and_private_detection_on_a_small_graph() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    components = strongly_connected(edges)
    assert sorted(map(sorted, components)) == [["a", "b", "c"], ["e"]]
    assert cycle_path(frozenset({"a", "b", "c"}), edges) == ["a", "b", "c", "a"]
    assert cycle_path(frozenset({"e"}), edges) == ["e", "e"]
    assert _is_private("_nested")
    assert not _is_private("__all__")
    assert not _is_private("nested")
