"""The project's import graph: no cycle among its modules, no private name crossing a module.

Every module under `audit_app`, `benchmarks_app` and `config` is parsed with `ast` (nothing is
imported). Each `import` / `from ... import` of a project module is collected, relative ones
resolved against the importing module's package:

- an import at module level or inside a function is a dependency: a cycle of them is a cycle
  between modules, whether it runs when a module loads or when a function first runs (the
  layers depend one way: `lib` <- `costs`, `ingestion` <- `reporting` <- the domain services
  <- the front ends, `audit_app.tasks` and `audit_app.derived`; a service queues a task by its
  name, never by importing `audit_app.tasks`). An import under `if TYPE_CHECKING:` is for the
  type checker only and is not counted;
- an import anywhere, module- or function-level, of a name starting with `_` from another
  project module, and an attribute `module._name` read through an imported project module, is
  a private name crossing modules.

Both lists below name what is still known to break these rules, each with its reason; they may
only shrink: an entry that no longer occurs fails the test too, so it is removed when its
cause is fixed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audit_app", "benchmarks_app", "config")

# Import cycles still known, each as the set of modules of its strongly connected component:
# none; a new one fails the test.
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
    module_level: bool  # runs when the importer loads
    type_checking: bool  # under `if TYPE_CHECKING:`: never runs
    line: int


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    return {
        module_name(path, root): path
        for package in packages
        for path in sorted((root / package).rglob("*.py"))
    }


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@dataclass(frozen=True)
class Where:
    """Where an import statement sits: whether it runs when the module loads, and whether it
    is for the type checker only."""

    module_level: bool
    type_checking: bool = False


def _import_nodes(
    node: ast.AST, *, where: Where
) -> Iterator[tuple[ast.Import | ast.ImportFrom, Where]]:
    """Every import statement under `node`, and where it sits."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, where
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _import_nodes(child, where=Where(False, where.type_checking))
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for statement in child.body:
                yield from _import_nodes(ast.Module(body=[statement]), where=Where(False, True))
            for statement in child.orelse:
                yield from _import_nodes(ast.Module(body=[statement]), where=where)
        else:
            yield from _import_nodes(child, where=where)


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
    for node, where in _import_nodes(tree, where=Where(True)):
        if isinstance(node, ast.Import):
            found.extend(
                Import(
                    importer=importer,
                    module=alias.name,
                    names=(),
                    module_level=where.module_level,
                    type_checking=where.type_checking,
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
                        module_level=where.module_level,
                        type_checking=where.type_checking,
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
                    module_level=where.module_level,
                    type_checking=where.type_checking,
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
    for node, _ in _import_nodes(tree, where=Where(True)):
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


Graph = tuple[dict[str, set[str]], list[Import], set[tuple[str, str, str]]]


@cache
def import_graph() -> Graph:
    """The project's graph (`build_graph`)."""
    return build_graph(project_modules())


def build_graph(modules: dict[str, Path]) -> Graph:
    """The edges (every import but the type checker's, module- or function-level), every
    import, and every private name crossing modules."""
    edges: dict[str, set[str]] = {name: set() for name in modules}
    everything: list[Import] = []
    private: set[tuple[str, str, str]] = set()
    for importer, path in modules.items():
        for found in imports_of(importer, path, modules):
            everything.append(found)
            if found.module == importer:
                continue
            if not found.type_checking:
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
    assert not new, "import cycles (imports at module level or in functions):\n" + "\n".join(new)
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


def test_a_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    """The walk on a small package: `a` imports `b` inside a function and `b` imports `a` at
    module level, a cycle; `c` imports `d` only for the type checker and `d` imports `c`, none."""
    package = tmp_path / "pkg"
    package.mkdir()
    sources = {
        "__init__.py": "",
        "a.py": "def run():\n    from pkg.b import helper\n    return helper()\n",
        "b.py": "import pkg.a\n\ndef helper():\n    return 1\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import d\n",
        "d.py": "from . import c\n",
    }
    for name, text in sources.items():
        (package / name).write_text(text)
    modules = project_modules(tmp_path, ("pkg",))
    assert set(modules) == {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"}
    edges, everything, _ = build_graph(modules)
    assert edges["pkg.a"] == {"pkg.b"} and edges["pkg.b"] == {"pkg.a"}
    assert edges["pkg.c"] == set() and edges["pkg.d"] == {"pkg.c"}
    assert [
        (i.importer, i.module_level, i.type_checking)
        for i in everything
        if i.importer in ("pkg.a", "pkg.c")
    ] == [
        ("pkg.a", False, False),
        ("pkg.c", False, True),
    ]
    components = strongly_connected(edges)
    assert components == [frozenset({"pkg.a", "pkg.b"})]
    assert cycle_path(components[0], edges) == ["pkg.a", "pkg.b", "pkg.a"]
