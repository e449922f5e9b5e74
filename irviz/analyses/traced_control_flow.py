"""Where a trace froze Python control flow: TracerWarnings mapped to module calls.

``torch.jit.trace`` records one path; a Python ``if`` on tensor data leaves no
node, only a TracerWarning on the user's line (once: Python shows a warning once per
line). This analysis finds every module call whose Python ``forward`` contains that
line - each call of a module the trace made, ``forward`` for the first and, as torch
names them, ``forward1``, ``forward2`` for the next (:func:`python_method`) - and
annotates its container with ``irviz.frozen`` (a one-line explanation), so the picture
can mark each of them: every call ran the same Python ``if``, and each froze the branch
its own input took. The full script-vs-trace comparison belongs to ``irviz lint``.

A BatchNorm traced in training mode warns too, from torch's own code (its batch-size
check in ``torch.nn.functional``), located at a line of the model with no branch (a
``Sequential``'s ``forward``). That warning is not a frozen ``if`` of the model's: the
modules to blame are the BatchNorms in training mode (:func:`batchnorms_in_training`);
their calls get ``irviz.training`` (what to do: call ``.eval()`` before tracing), and
:meth:`irviz.view.Visualization.notes` names them under the title.
"""
from __future__ import annotations

import functools
import inspect
import re

import networkx as nx

from ..frontends.capture import Capture, CapturedWarning
from ..location import source_line
from ..paths import is_torch_file, torch_relative

#: TracerWarning prefixes that mean a Python value was frozen into the trace
FROZEN_PREFIXES = ("Converting a tensor to a Python", "Iterating over a tensor",
                   "Using len to get tensor shape")


#: torch's names for a method it made itself: a trace's later calls of a module's forward
#: (``forward1``, ``forward2``) and an overload of a scripted method (``forward__0``)
_TRACE_CALL = re.compile(r"^(forward)(\d+)$")
_OVERLOAD = re.compile(r"^(\w+?)__(\d+)$")


def python_method(method: str | None, traced: bool = True) -> str | None:
    """The name of the Python method a call container's ``method`` runs: torch's names for
    the methods it made (``forward1``: a trace's second call of ``forward``; ``forward__0``:
    an overload of a scripted ``forward``) without their numbers. ``traced``: the graph
    comes from a trace (a trace, or an archive, which may hold one), so ``forward1`` is
    torch's name; in a scripted graph it is the user's own method."""
    if not method:
        return method
    found = _OVERLOAD.match(method) or (_TRACE_CALL.match(method) if traced else None)
    return found.group(1) if found else method


def _forward_range(module, method: str) -> tuple[str, int, int] | None:
    cls = type(module)
    if getattr(cls, method, None) is None:   # forward1: the trace's second call of forward
        method = python_method(method) or "forward"
    return _class_method_range(cls, method)


@functools.lru_cache(maxsize=1024)
def _class_method_range(cls: type, method: str) -> tuple[str, int, int] | None:
    """(file, first line, last line) of ``cls.method``; cached: one lookup per class."""
    fn = getattr(cls, method, None)
    try:
        lines, start = inspect.getsourcelines(fn)
        return inspect.getsourcefile(fn), start, start + len(lines) - 1
    except (TypeError, OSError):
        return None


def annotate_frozen_control_flow(G: nx.DiGraph, capture: Capture) -> None:
    """Write ``irviz.frozen`` on the containers whose Python code the trace froze."""
    if capture.mode != "trace":
        return
    root = capture.target.obj
    get = getattr(root, "get_submodule", None)
    annotate_training_batchnorms(G, capture)
    frozen = [w for w in capture.warnings if w.category == "TracerWarning"
              and w.origin is None and w.message.startswith(FROZEN_PREFIXES)
              and not is_batchnorm_check(w)]
    for warning in frozen:
        code = source_line(f"{warning.filename}:{warning.lineno}:1") or ""
        text = f"⚠ trace froze line {warning.lineno}: {code}"
        for cid, info in G.graph["blocks"].items():
            if info["kind"] != "method" or get is None:
                continue
            try:
                module = get(info["module"]) if info["module"] else root
            except AttributeError:
                continue
            span = _forward_range(module, info.get("method") or "forward")
            if span and span[0] == warning.filename and span[1] <= warning.lineno <= span[2]:
                info["irviz.frozen"] = text


# -- BatchNorm traced in training mode ----------------------------------------------------
#: what a BatchNorm call in training mode says in the picture (``irviz.training``)
TRAINING_MARK = "⚠ training mode: call .eval() before tracing"


@functools.lru_cache(maxsize=1)
def _batchnorm_checks() -> tuple[tuple[str, int, int], ...]:
    """(torch-relative file, first line, last line) of the torch code whose TracerWarning
    means a BatchNorm ran in training mode while tracing: ``F.batch_norm`` and its
    batch-size check (``if size_prods == 1``), and ``nn/modules/batchnorm.py``."""
    import torch.nn.functional as F

    out = [("nn/modules/batchnorm.py", 0, 1 << 30)]
    for name in ("_verify_batch_size", "batch_norm"):
        fn = getattr(F, name, None)
        try:
            lines, start = inspect.getsourcelines(fn)
            out.append((torch_relative(inspect.getsourcefile(fn)), start,
                        start + len(lines) - 1))
        except (TypeError, OSError):
            continue
    return tuple(out)


def is_batchnorm_check(warning: CapturedWarning) -> bool:
    """A TracerWarning raised by BatchNorm's training-mode code in torch (its batch-size
    check converts the traced size to a Python bool), wherever it was located."""
    if warning.category != "TracerWarning":
        return False
    where = warning.origin
    if where is None and is_torch_file(warning.filename):
        where = f"{torch_relative(warning.filename)}:{warning.lineno}"
    if not where or ":" not in where:
        return False
    path, _, line = where.rpartition(":")
    path = path.replace("\\", "/")
    return line.isdigit() and any(path == f and lo <= int(line) <= hi
                                  for f, lo, hi in _batchnorm_checks())


def constant_arg(G: nx.DiGraph, data: dict, arg: str) -> str | None:
    """The label of the constant passed as argument ``arg`` (torch's schema name) of an
    op node, if it is one (``"True"``, ``"None"``, ``"0.5"``)."""
    names = data.get("arg_names") or []
    if arg not in names:
        return None
    i = names.index(arg)
    producers = data["inputs"][i] if i < len(data["inputs"]) else []
    if len(producers) != 1 or producers[0] not in G:
        return None
    producer = G.nodes[producers[0]]
    return producer["label"] if producer["kind"] == "prim::Constant" else None


def training_flag_matters(G: nx.DiGraph, data: dict) -> bool:
    """Whether an op's training flag changes what it computes: a norm with no running
    statistics (``InstanceNorm2d(track_running_stats=False)``, a weight-standardising
    ``F.batch_norm(w, None, None, training=True)``) uses the input's statistics in
    either mode, and dropout with ``p=0`` is the identity in either mode."""
    kind = data["kind"]
    if kind in ("aten::batch_norm", "aten::instance_norm"):
        return constant_arg(G, data, "running_mean") != "None"
    if "dropout" in kind:
        return constant_arg(G, data, "p") not in ("0", "0.", "0.0")
    return True


def normalised_by_batch(G: nx.DiGraph) -> bool:
    """Whether the trace has a ``batch_norm`` that normalises by the batch's statistics
    where eval mode would use its running ones (its ``training`` is True and it has
    running statistics). torch's batch-size check warns for more than that: GroupNorm
    runs it too, and so does a ``batch_norm`` with no running statistics, which computes
    the same in either mode."""
    return any(data["kind"] == "aten::batch_norm"
               and constant_arg(G, data, "training") in ("True", "1")
               and training_flag_matters(G, data) for _, data in G.nodes(data=True))


def batchnorms_in_training(root) -> list[tuple[str, str]]:
    """``(path, class)`` of every BatchNorm module of ``root`` in training mode with
    running statistics (``("1", "BatchNorm2d")`` in ``Sequential(Conv2d, BatchNorm2d)``),
    in module order. One without running statistics normalises by the batch in either
    mode."""
    import torch

    named = getattr(root, "named_modules", None)
    if named is None:
        return []
    return [(path, type(m).__name__) for path, m in named()
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.training
            and m.running_mean is not None]


def annotate_training_batchnorms(G: nx.DiGraph, capture: Capture) -> list[tuple[str, str]]:
    """Write ``irviz.training`` on the calls of the BatchNorms a trace ran in training mode
    (when torch warned from BatchNorm's code and the graph has a ``batch_norm`` that
    used the batch's statistics); returns their ``(path, class)``."""
    if capture.mode != "trace" or not any(is_batchnorm_check(w) for w in capture.warnings) \
            or not normalised_by_batch(G):
        return []
    found = batchnorms_in_training(capture.target.obj)
    paths = {path for path, _ in found}
    for info in G.graph["blocks"].values():
        if info["kind"] == "method" and info.get("module") in paths:
            info["irviz.training"] = TRAINING_MARK
    return found
