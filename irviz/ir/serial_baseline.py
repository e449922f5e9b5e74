"""The serial baseline of a model: the same IR with every ``torch.jit.fork`` task run inline.

Why it exists: "what do my forks buy?" needs the model run *without* its forks, on
the same weights, and writing that version by hand is not something a user of
``irviz report --measure`` should have to do. This module rewrites a copy of the
model's TorchScript graph (it sits beside :mod:`irviz.ir.build`, which walks the same
graphs; :mod:`irviz.measure` times the result in a child process).

:func:`build_serial_baseline` *copies* the entry graph (graphs are shared per
compiled type: the user's graph is never changed), inlines every call, also inside
fork subgraphs (:func:`deep_inline`), and rewrites each ``prim::fork``, outermost
first (:func:`serialize_forks`):

* the task's body is inserted into the caller where the fork was, so the task
  runs right there, on the caller's thread, before the code that followed the fork;
* a fork whose future is only ever consumed by ``aten::wait`` (a direct
  fork/wait pair) disappears: each wait is replaced by the task's result;
* a fork whose future goes elsewhere (into a list of futures, a tuple, a loop
  value, a return) stays, but its task becomes the identity function of the
  already computed result - a future that is complete when it is created.
  All types stay the same, so lists of futures, waits in loops, nested forks,
  forks in loops and traced forks all keep working.

``torch._C._jit_pass_inline_fork_wait`` does the first two steps only; it
breaks on futures in lists (``aten::append(Future[Tensor][], Tensor)``, an
INTERNAL ASSERT at run time) and on nested forks (``unordered_map::at``), which
is why irviz does its own rewrite. The baseline is a TorchScript function made
from the rewritten graph; for modules it takes the module object as ``self``, so
it reads the same parameters as the forked model. :func:`outputs_equal` checks it
against the forked model (``torch.allclose`` on every output tensor).

:func:`fork_site_labels` names what each fork site runs (``cell_f: LSTM``) for the
measured timeline. It reads torch's fork subgraphs, not the irviz IR graph, so it is
separate from :func:`irviz.analyses.fork_wait.task_callee` (which names a fork's
task in the report from the IR graph's blocks, e.g. ``models.0.forward``).
"""
from __future__ import annotations

import re
from typing import Any, Callable

import torch

__all__ = ["BaselineError", "SerialBaseline", "build_serial_baseline", "deep_inline",
           "serialize_forks", "fork_site_labels", "outputs_equal", "one_line"]


def one_line(exc: BaseException) -> str:
    """``Type: message`` in one line; for TorchScript errors the underlying exception."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if "The following operation failed in the TorchScript interpreter" in text and lines:
        last = lines[-1]
        last = last.removeprefix("builtins.")
        return last if ":" in last else f"{type(exc).__name__}: {last}"
    first = lines[0] if lines else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class BaselineError(Exception):
    """No serial baseline could be built for the model (the message says why)."""


def _fork_nodes(block: Any) -> list:
    """Every ``prim::fork`` in a graph or block, including nested If/Loop blocks
    (not inside fork subgraphs)."""
    out = []
    for node in block.nodes():
        if node.kind() == "prim::fork":
            out.append(node)
        for sub in node.blocks():
            out.extend(_fork_nodes(sub))
    return out


_SOURCE = re.compile(r'File "([^"]+)", line (\d+)')


def _site(node: Any) -> tuple[str, int] | None:
    m = _SOURCE.search(node.sourceRange() or "")
    return (m.group(1), int(m.group(2))) if m else None


def _attr_path(value: Any) -> str | None:
    """``models.0`` for a value made by a chain of ``prim::GetAttr`` from ``self``."""
    names = []
    node = value.node()
    while node.kind() == "prim::GetAttr":
        names.append(node.s("name"))
        node = node.inputsAt(0).node()
    return ".".join(reversed(names)) or None


def _short_type(value: Any) -> str:
    return str(value.type()).rsplit(".", 1)[-1]


def _callee(fork: Any) -> str:
    """What a fork runs, read from its (not yet inlined) subgraph: ``cell_f: LSTM``
    (attribute path: module type), a function's name, or the first op's name."""
    sub = fork.g("Subgraph")
    sub_inputs = list(sub.inputs())
    fork_inputs = list(fork.inputs())
    for node in sub.nodes():
        kind = node.kind()
        if kind == "prim::Constant":
            continue
        if kind == "prim::CallFunction":
            fn = node.inputsAt(0).node()
            if fn.kind() == "prim::Constant" and fn.hasAttribute("name"):
                return fn.s("name")
            return "function"
        if kind == "prim::CallMethod":
            obj = node.inputsAt(0)
            path = None
            for i, v in enumerate(sub_inputs):
                if v.unique() == obj.unique() and i < len(fork_inputs):
                    path = _attr_path(fork_inputs[i])
            method = re.sub(r"__\d+$", "", node.s("name"))  # LSTM's overloads: forward__0
            what = _short_type(obj) + ("" if method == "forward" else f".{method}")
            return f"{path}: {what}" if path else what
        return kind.split("::", 1)[-1]
    return "task"


def _merge_labels(labels: list[str]) -> str:
    """One label for the forks of one source line (ModuleList loops are unrolled)."""
    unique = list(dict.fromkeys(labels))
    if len(unique) == 1:
        return unique[0]
    parts = [u.split(": ", 1) for u in unique]
    if all(len(p) == 2 for p in parts) and len({p[1] for p in parts}) == 1:
        paths = [p[0].rsplit(".", 1) for p in parts]
        if all(len(p) == 2 for p in paths) and len({p[0] for p in paths}) == 1:
            return f"{paths[0][0]}.*: {parts[0][1]}"
    return " / ".join(unique)


def deep_inline(graph: Any, sites: dict | None = None) -> None:
    """Inline every call of ``graph`` in place, also inside fork subgraphs (copied first).

    When ``sites`` is a dict, record ``(file, line) -> [callee label, ...]`` for every
    fork that has a source range (traced forks have none).
    """
    torch._C._jit_pass_inline(graph)
    for fork in _fork_nodes(graph):
        if sites is not None:
            where = _site(fork)
            if where is not None:
                sites.setdefault(where, []).append(_callee(fork))
        sub = fork.g("Subgraph").copy()
        deep_inline(sub, sites)
        fork.g_("Subgraph", sub)


def _is_identity(sub: Any) -> bool:
    ins, outs = list(sub.inputs()), list(sub.outputs())
    return (not list(sub.nodes()) and len(ins) == 1 and len(outs) == 1
            and outs[0].unique() == ins[0].unique())


def serialize_forks(graph: Any) -> dict:
    """Rewrite every fork of a deep-inlined ``graph`` in place so its task runs inline.

    Returns ``{"forks": rewritten, "inlined": direct pairs removed, "completed": forks
    kept as already-completed futures}`` (see the module docstring).
    """
    stats = {"forks": 0, "inlined": 0, "completed": 0}
    while True:
        todo = [f for f in _fork_nodes(graph) if not _is_identity(f.g("Subgraph"))]
        if not todo:
            break
        fork = todo[0]
        stats["forks"] += 1
        with graph.insert_point_guard(fork):
            [result] = graph.insertGraph(fork.g("Subgraph"), list(fork.inputs()))
        users = [use.user for use in fork.output().uses()]
        if all(u.kind() == "aten::wait" for u in users):
            for wait in users:
                wait.output().replaceAllUsesWith(result)
                wait.destroy()
            fork.destroy()
            stats["inlined"] += 1
        else:
            identity = torch._C.Graph()
            value = identity.addInput()
            value.setType(result.type())
            identity.registerOutput(value)
            fork.removeAllInputs()
            fork.addInput(result)
            fork.g_("Subgraph", identity)
            stats["completed"] += 1
    graph.lint()
    return stats


class SerialBaseline:
    """The serial version of a scripted model: ``baseline(*inputs)``.

    ``description`` says in one sentence how it was built; ``info`` is ``{"method":
    "inline" | "inline+completed" | "model-has-no-forks", "forks", "inlined",
    "completed"}`` (see :func:`serialize_forks`).
    """

    def __init__(self, fn: Callable, description: str, info: dict,
                 module: Any = None, function: Any = None):
        self.fn = fn
        self.description = description
        self.info = info
        #: the scripted model whose object a rewritten forward takes first (None: a function)
        self.module = module
        #: the rewritten graph's ScriptFunction (None: the model itself is the baseline)
        self.function = function

    def __call__(self, *inputs: Any) -> Any:
        return self.fn(*inputs)


def build_serial_baseline(scripted: Any, entry: str = "forward") -> SerialBaseline:
    """A serial baseline of a ScriptModule / ScriptFunction (see the module docstring);
    ``entry``: the module's method that runs (an overload of ``nn.LSTM.forward`` is
    ``forward__0``: the scripted module has no ``forward``).

    Raises :class:`BaselineError` when the graph cannot be rewritten or compiled.
    """
    is_module = isinstance(scripted, torch.jit.ScriptModule)
    overload = is_module and entry != "forward"
    try:
        graph = (scripted._c._get_method(entry).graph if overload else scripted.graph).copy()
    except Exception as exc:  # noqa: BLE001
        raise BaselineError(f"its graph cannot be copied ({one_line(exc)})") from None
    try:
        deep_inline(graph)
        if not _fork_nodes(graph):
            info = {"method": "model-has-no-forks", "forks": 0, "inlined": 0, "completed": 0}
            model = getattr(scripted, entry) if overload else scripted
            return SerialBaseline(model, "the model has no prim::fork: the serial "
                                            "baseline is the model itself", info)
        stats = serialize_forks(graph)
        fn = torch._C._create_function_from_graph("irviz_serial_forward", graph)
    except Exception as exc:  # noqa: BLE001 - torch raises RuntimeError & co.
        raise BaselineError(f"rewriting its forks failed: {one_line(exc)}") from None
    if is_module:
        obj = scripted._c
        call = lambda *inputs: fn(obj, *inputs)  # noqa: E731
    else:
        call = fn
    method = "inline" if stats["completed"] == 0 else "inline+completed"
    text = (f"copy of the {'forward ' if is_module else ''}graph with calls inlined; "
            f"{stats['forks']} fork(s) run inline in the caller: {stats['inlined']} "
            f"direct fork/wait pair(s) removed")
    if stats["completed"]:
        text += (f", {stats['completed']} fork(s) whose futures go elsewhere (lists, loops, "
                 f"returns) kept as already-completed futures (identity tasks)")
    return SerialBaseline(call, text, {"method": method, **stats},
                          module=scripted if is_module else None, function=fn)


def fork_site_labels(scripted: Any) -> dict[tuple[str, int], str]:
    """``(file, line) -> label`` of every fork site of a scripted model (e.g. ``cell_f: LSTM``)."""
    sites: dict[tuple[str, int], list[str]] = {}
    try:
        graph = scripted.graph.copy()
        deep_inline(graph, sites)
    except Exception:  # noqa: BLE001 - labels are a nicety
        return {}
    return {k: _merge_labels(v) for k, v in sites.items()}


def outputs_equal(a: Any, b: Any) -> bool:
    """``torch.allclose`` on every tensor of two (nested) outputs; ``==`` on the rest."""
    if isinstance(a, torch._C.Future) and isinstance(b, torch._C.Future):
        return outputs_equal(a.wait(), b.wait())  # a model may return futures
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point() or a.is_complex():
            return bool(torch.allclose(a, b, equal_nan=True))
        return bool(torch.equal(a, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(outputs_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(outputs_equal(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object without a usable ==
        return False
