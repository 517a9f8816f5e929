"""No import cycles inside the core: the module graph of ``memory_retrievers/``, read with ``ast``, is acyclic.

Every ``import`` counts, at module level or inside a function (a function-level import is how a
cycle hides: it breaks at import time only because it runs later). Imports under
``if TYPE_CHECKING:`` do not count: they never run. An edge goes to the module named; importing a
package's name (``from . import x`` where ``x`` is not a submodule, ``from memory_retrievers import
MemoryStore``) is an edge to the package's ``__init__``. The implicit import of a parent package
when a submodule loads is not an edge: every module would otherwise sit in a cycle with its
package's ``__init__``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import memory_retrievers

PACKAGE = Path(memory_retrievers.__file__).parent
ROOT_NAME = "memory_retrievers"

#: Cycles that exist on purpose or are owned elsewhere, each as the sorted modules of its strongly
#: connected component, with why. Empty: the core has none.
KNOWN_CYCLES: set[frozenset[str]] = set()


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import node, skipping the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs, so it counts)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _targets(node: ast.Import | ast.ImportFrom, name: str, package: bool, modules: set[str]) -> set[str]:
    """The core modules one import node of module ``name`` loads."""
    if isinstance(node, ast.Import):
        found = set()
        for alias in node.names:
            parts = alias.name.split(".")
            # `import a.b.c` names a.b.c; the longest prefix that is a module of ours is the edge.
            for end in range(len(parts), 0, -1):
                candidate = ".".join(parts[:end])
                if candidate in modules:
                    found.add(candidate)
                    break
        return found
    if node.level:
        base_parts = name.split(".") if package else name.split(".")[:-1]
        base_parts = base_parts[: len(base_parts) - (node.level - 1)]
        base = ".".join(base_parts)
        target = f"{base}.{node.module}" if node.module else base
    else:
        target = node.module or ""
    found = set()
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        if sub in modules:  # `from pkg import submodule`
            found.add(sub)
        elif target in modules:  # `from module import name`
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the core modules it imports (itself excluded)."""
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        name = module_name(path)
        edges: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            edges |= _targets(node, name, is_package(path), modules)
        graph[name] = edges - {name}
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Tarjan's algorithm, iterative; components of one module without a self-edge are left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(frozenset(component))
    return out


def a_cycle(graph: dict[str, set[str]], component: frozenset[str]) -> list[str]:
    """One concrete cycle through ``component`` (shortest back to its first module), for the message."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    return [*paths[node], start]
                if child not in paths:
                    paths[child] = [*paths[node], child]
                    following.append(child)
        frontier = following
    return [start]  # unreachable for a strongly connected component


def describe(graph: dict[str, set[str]], components: list[frozenset[str]]) -> str:
    return "\n".join(" -> ".join(a_cycle(graph, c)) for c in components)


def test_the_core_has_no_import_cycle() -> None:
    graph = import_graph()
    found = [c for c in strongly_connected(graph) if c not in KNOWN_CYCLES]
    assert not found, "import cycle(s) in memory_retrievers/:\n" + describe(graph, found)


def test_the_known_cycles_still_exist() -> None:
    # A known cycle that is gone must leave the list, so the list never hides a new one.
    current = set(strongly_connected(import_graph()))
    assert current >= KNOWN_CYCLES, f"no longer cycles, drop them from KNOWN_CYCLES: {KNOWN_CYCLES - current}"


def test_the_graph_reader_sees_function_level_imports_and_skips_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .store import MemoryStore\n"
        "def f():\n    from .formation import MemoryFormer\n"
        "from . import _loop\n"
    )
    modules = {
        "memory_retrievers.store",
        "memory_retrievers.formation",
        "memory_retrievers._loop",
        "memory_retrievers",
    }
    found: set[str] = set()
    for node in _imports(ast.parse(source)):
        found |= _targets(node, "memory_retrievers.integration", False, modules)
    assert found == {"memory_retrievers.formation", "memory_retrievers._loop"}


def test_the_cycle_finder_finds_a_cycle_and_prints_it() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    components = strongly_connected(graph)
    assert components == [frozenset({"a", "b", "c"})]
    assert describe(graph, components) == "a -> b -> c -> a"
