"""irviz imports in one direction, over the whole package: every module sits on a declared
floor, no module imports (even lazily, inside a function) one on a higher floor, and no
modules import each other in a circle. The one import that runs back up is the package's
lazy PEP 562 ``__getattr__`` (``irviz`` -> ``irviz.api``): ``import irviz`` stays cheap and
``irviz.visualize`` still works."""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import irviz

PACKAGE = Path(irviz.__file__).parent

#: bottom to top; a module's floor is that of the longest prefix naming it. A module may
#: import its own floor and the floors below it, never one above.
FLOORS: list[tuple[str, ...]] = [
    # ground: errors, paths, settings, files, the child-process protocol, source locations
    ("irviz", "irviz.errors", "irviz.paths", "irviz.compat", "irviz.gc_pause", "irviz.progress",
     "irviz.files", "irviz.exits", "irviz.output", "irviz.config", "irviz.child",
     "irviz.isolate", "irviz.location"),
    ("irviz.frontends",),        # the only callers of torch.jit / torch.export on the model
    ("irviz.ir",),               # captures -> the IR graph
    ("irviz.analyses",),         # facts annotated on the graph
    ("irviz.measure",),          # a timed run in a child process
    ("irviz.render",),           # the graph drawn
    ("irviz.lint",),             # findings on one target
    ("irviz.report",),           # findings, facts and diffs written out
    ("irviz.view",),             # what a render returns
    ("irviz.workspace",),        # load once, capture once, analyse once
    ("irviz.lint.batch", "irviz.lint.parallel", "irviz.lint.session",   # a run: many targets
     "irviz.measure.child"),     # the measuring child's entry: captures through a Workspace
    ("irviz.commands",),         # one request -> run(request, ws) -> exit code
    ("irviz.api", "irviz.cli", "irviz.sphinxext", "irviz.__main__"),   # interfaces
]
#: the deliberate upward import: the package's lazy names (PEP 562)
ALLOWED_UPWARD = {("irviz", "irviz.api")}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path = PACKAGE) -> dict[str, Path]:
    return {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The irviz modules the file imports, at the top or inside a function: the module
    itself when it is one, else the package that holds the imported name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            candidates = [f"{module}.{a.name}" for a in node.names]
            found.update(c if c in known else module for c in candidates)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    resolved = set()
    for module in found:
        while module and module not in known:
            module = module.rpartition(".")[0]
        if module.startswith("irviz") and module != name:
            resolved.add(module)
    return resolved


def import_graph(root: Path = PACKAGE) -> nx.DiGraph:
    modules = _modules(root)
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        graph.add_edges_from((name, imported) for imported in _imports(path, name, set(modules)))
    return graph


def floor(module: str) -> int:
    best, level = "", None
    for index, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, level = prefix, index
    assert level is not None, f"{module} has no floor: add it to FLOORS"
    return level


def upward_imports(graph: nx.DiGraph) -> list[tuple[str, str]]:
    return sorted((a, b) for a, b in graph.edges if floor(b) > floor(a))


def circles(graph: nx.DiGraph) -> list[list[str]]:
    without_lazy = graph.copy()
    without_lazy.remove_edges_from(ALLOWED_UPWARD)
    return [sorted(c) for c in nx.strongly_connected_components(without_lazy) if len(c) > 1]


def test_every_module_has_a_floor():
    for module in import_graph():
        floor(module)


def test_no_import_runs_up_a_floor():
    upward = [f"{a} (floor {floor(a)}) -> {b} (floor {floor(b)})"
              for a, b in upward_imports(import_graph()) if (a, b) not in ALLOWED_UPWARD]
    assert not upward, "imports that run back up:\n" + "\n".join(upward)


def test_the_lazy_api_is_the_one_upward_import():
    assert set(upward_imports(import_graph())) == ALLOWED_UPWARD


def test_no_import_circle():
    found = circles(import_graph())
    assert not found, "modules that import each other in a circle: " + "; ".join(
        " <-> ".join(c) for c in found)


def test_records_are_at_the_bottom_of_frontends():
    graph = import_graph()
    assert {m for m in graph.successors("irviz.frontends.records")} == set()
    assert set(graph.successors("irviz.frontends.user_code")) <= {
        "irviz.frontends.records", "irviz.paths"}
    # the modules once found in a circle import only what sits below them
    assert "irviz.frontends.loader" not in nx.descendants(graph, "irviz.frontends.export")
    assert "irviz.frontends.capture" not in nx.descendants(graph, "irviz.frontends.export")
    assert "irviz.frontends.loader" not in nx.descendants(graph, "irviz.frontends.inputs")
    assert "irviz.frontends.retrace" not in nx.descendants(graph, "irviz.frontends.capture")


def test_the_checker_sees_lazy_imports_circles_and_upward_imports(tmp_path):
    """The checks can fail: a lazy import is seen, a circle and an upward import found."""
    package = tmp_path / "irviz"
    (package / "frontends").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "frontends" / "__init__.py").write_text("")
    (package / "errors.py").write_text("def f():\n    from .frontends import loader\n")
    (package / "frontends" / "loader.py").write_text("from ..errors import f\n")
    (package / "frontends" / "export.py").write_text(
        "def g():\n    from irviz.frontends.loader import x\n    from . import loader\n")
    graph = import_graph(package)
    assert set(graph.successors("irviz.frontends.export")) == {"irviz.frontends.loader"}
    assert circles(graph) == [["irviz.errors", "irviz.frontends.loader"]]
    assert upward_imports(graph) == [("irviz.errors", "irviz.frontends.loader")]
