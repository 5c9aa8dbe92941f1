"""The package's import graph: every module imports alone in a fresh interpreter, and ribbon's
modules import each other as a tree (no cycle, counting imports inside functions and under
TYPE_CHECKING too: a cycle there is one refactoring away from an import-time failure)."""

import ast
import pathlib
import subprocess
import sys

import pytest

import ribbon

PACKAGE = pathlib.Path(ribbon.__file__).resolve().parent
# Modules that need an optional dependency to import at all, and that dependency.
NEEDS = {"ribbon.spark": "pyspark", "ribbon.lake": "pyarrow", "ribbon.distributed": "pyarrow",
         "ribbon._lakecore": "pyarrow", "ribbon.lake.iceberg": "pyiceberg"}


def module_name(path: pathlib.Path) -> str:
    parts = ("ribbon",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
# The extension: a leaf that imports no ribbon module.
EXTENSIONS = {"ribbon._ribbon"}


def imported_by(name: str, path: pathlib.Path):
    """The ribbon modules that ``name``'s source imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from . import x` imports the module x where there is one.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES.keys() | EXTENSIONS
                       else base for a in node.names]
        else:
            continue
        for target in targets:
            # Importing a.b.c runs a and a.b first: the nearest module that exists.
            while target and target not in MODULES.keys() | EXTENSIONS:
                target = target.rpartition(".")[0]
            if target and target != name and target not in EXTENSIONS:
                found.add(target)
    return found


def packages_run_first(importer: str, target: str):
    """The packages whose ``__init__`` an import of ``target`` from ``importer`` runs first:
    target's enclosing packages that do not enclose the importer (those are running already),
    ribbon itself excepted (everything is below it)."""
    parts = target.split(".")
    for n in range(2, len(parts)):
        package = ".".join(parts[:n])
        if package in MODULES and not (importer + ".").startswith(package + "."):
            yield package


def graph():
    """Every module's edges: what its source imports, and the packages that such an import
    runs first (ribbon.spark.api from ribbon.lake runs ribbon/spark/__init__.py, and with it
    everything that imports)."""
    edges = {name: imported_by(name, path) for name, path in MODULES.items()}
    for name, targets in edges.items():
        targets |= {p for t in list(targets) for p in packages_run_first(name, t)}
    return edges


def find_cycle(edges):
    """One cycle of ``edges`` as a list of modules, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_graph_counts_packages_and_function_level_imports():
    edges = graph()
    # ribbon.lake's Spark engine imports ribbon.spark's build inside a function, and with it
    # ribbon/spark/__init__.py; a package's own modules do not run its __init__ again.
    assert {"ribbon.spark.api", "ribbon.spark"} <= edges["ribbon.lake._build"]
    assert "ribbon.distributed" not in edges["ribbon.distributed.assembly"]


def test_no_cycle():
    assert find_cycle(graph()) is None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_imports_alone(name):
    parts = name.split(".")
    for n in range(2, len(parts) + 1):  # every package's need, and the module's own
        if ".".join(parts[:n]) in NEEDS:
            pytest.importorskip(NEEDS[".".join(parts[:n])])
    if name.endswith("__main__"):
        pytest.skip("runs the command line when imported")
    result = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
