"""No import cycle in the expconsole packages, counting imports inside functions too; and the
runtime package (expconsole, shipped to Lambda) never imports the tooling (expconsole_tools).

A cycle hidden in a function-level import still ties the modules together: each needs the
other to be loadable, and a change to one can break the other at run time. The graph is built
from the source (ast), so it sees every import, taken or not by a test.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Each package and the folder that holds it.
PACKAGES = {"expconsole": REPO / "layers" / "core", "expconsole_tools": REPO / "tools"}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p, root): p for package, root in PACKAGES.items() for p in (root / package).rglob("*.py")
    }


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The package module `name` names (a module, or a name inside one: `pkg.mod.func`)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names] or [base]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
            "lazy_import",
        ):
            names = [
                a.value for a in node.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
        for name in names:
            target = _resolve(name, modules)
            # `from pkg import mod` names a module; importing a package's own name is not a cycle.
            if target is not None and target != module and not module.startswith(target + "."):
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected component of more than one module (Tarjan), as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_cycles_are_found_and_function_level_imports_are_edges() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    graph = _graph()
    assert len(graph) == len(_modules())
    # The CLI imports the importer only inside its command (so `--help` stays quick): still an edge.
    assert "expconsole_tools.importer" in graph["expconsole_tools.cli"]
    # So is an import inside a function of a service.
    assert "expconsole.services.metrics" in graph["expconsole.services.experiments"]


def test_the_runtime_package_never_imports_the_tooling() -> None:
    graph = _graph()
    wrong = {
        module: sorted(t for t in targets if t.split(".")[0] == "expconsole_tools")
        for module, targets in graph.items()
        if module.split(".")[0] == "expconsole"
    }
    assert {m: t for m, t in wrong.items() if t} == {}


def test_no_import_cycle_in_the_package() -> None:
    cycles = _cycles(_graph())
    assert cycles == [], "import cycles (each a group of modules importing each other):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )
