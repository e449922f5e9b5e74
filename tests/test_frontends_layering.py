"""frontends/ imports in one direction: no module imports (even lazily, inside a function)
one that imports it back, and the shared records sit at the bottom."""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import irviz.frontends

FRONTENDS = Path(irviz.frontends.__file__).parent


def _imports(path: Path) -> set[str]:
    """The frontends modules ``path`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 1:  # from .x import y / from . import x
                found.update([module.split(".")[0]] if module else [a.name for a in node.names])
            elif module.startswith("irviz.frontends."):
                found.add(module.split(".")[2])
            elif module == "irviz.frontends":
                found.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[2] for a in node.names
                         if a.name.startswith("irviz.frontends."))
    return found - {path.stem}


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for path in sorted(FRONTENDS.glob("*.py")):
        if path.stem == "__init__":
            continue
        graph.add_node(path.stem)
        for imported in _imports(path):
            assert (FRONTENDS / f"{imported}.py").exists(), f"{path.name} imports {imported}"
            graph.add_edge(path.stem, imported)
    return graph


def test_frontends_import_graph_has_no_cycle():
    graph = _graph()
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, "frontends/ imports in a circle: " + "; ".join(
        " -> ".join(c + [c[0]]) for c in cycles)


def test_records_are_at_the_bottom():
    graph = _graph()
    assert set(graph.successors("records")) == set()
    assert set(graph.successors("user_code")) <= {"records"}
    # the modules the issue found in a circle now import only what sits below them
    assert "loader" not in nx.descendants(graph, "export")
    assert "capture" not in nx.descendants(graph, "export")
    assert "loader" not in nx.descendants(graph, "inputs")
    assert "retrace" not in nx.descendants(graph, "capture")


def test_the_checker_sees_a_lazy_import(tmp_path):
    """A cycle through an import inside a function is found (the test can fail)."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from .loader import load\n    from irviz.frontends.export import x\n")
    assert _imports(probe) == {"loader", "export"}
