"""The breadth corpus (tests/corpus/nn_breadth.py): every torch.nn module and torch op in it
that torch itself scripts or traces renders through irviz with no internal error - as
Python irviz scripts or traces, as the ScriptModule / ScriptFunction torch.jit.script made
and as that module's saved archive - every shape irviz draws is one eager execution
produced, and in script mode every op value that ran has one (script mode's shapes come
from running the compiled code: ``benchmarks/script_shapes_coverage.py`` counts the same
on torch's OpInfo / ModuleInfo fixtures and timm).

The oracle shares no code with irviz: a TorchDispatchMode records what eager PyTorch ran,
as (op name, output shape, dtype). A drawn aten node with a complete shape must match one
of those records of the same op name (ops eager dispatch runs under another name, those a
CompositeImplicit kernel decomposes, are not compared: nothing to compare with).
"""
from __future__ import annotations

import collections
import sys
import warnings

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from irviz.api import visualize
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "corpus"))
from nn_breadth import ENTRIES  # noqa: E402

class _Eager(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen: set[tuple] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func._schema.name.split("::")[-1]
        values = out if isinstance(out, (tuple, list)) else (out,)
        for value in values:
            if isinstance(value, torch.Tensor):
                self.seen.add((name, tuple(value.shape), str(value.dtype)[6:]))
        return out


def _torch_compiles(model, inputs, mode) -> str | None:
    """None when torch itself scripts / traces the model, else why not."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if mode == "script":
                torch.jit.script(model)
            else:
                torch.jit.trace(model, inputs, check_trace=False)
        except Exception as exc:  # noqa: BLE001 - torch raises many types
            return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:100]}"
    return None


#: ops a trace records that eager runs as no-ops (a full ``x[:, :2]`` slice of dim 0)
_NO_OP_VIEWS = ("slice", "contiguous", "to", "view", "reshape", "expand", "alias")


def _ran_without_a_shape(G):
    """Drawn aten nodes with a tensor output and no shape, outside every ``if`` block and
    loop body the recorded run did not enter (``runs == 0``)."""
    blocks = G.graph["blocks"]
    for node, data in G.nodes(data=True):
        if not data["kind"].startswith("aten::") or data.get("hidden"):
            continue
        block, ran = data.get("block"), True
        while block is not None and ran:
            ran = blocks[block].get("runs") != 0
            block = blocks[block]["parent"]
        if ran and any(o.get("type") == "Tensor" and o.get("shape") is None
                       for o in data["outputs"]):
            yield node


def _drawn_shapes(G, mode):
    """(op, shape, dtype) of every drawn aten output with a complete shape; not compared: a
    trace's size arithmetic (0-dim int64 tensors where eager had Python ints), and a view
    that leaves its input's shape as it was (eager skips it: ``x[:, :2]`` dispatches no
    slice of dim 0, a trace and compiled code do)."""
    for node, data in G.nodes(data=True):
        if not data["kind"].startswith("aten::"):
            continue
        op = data["kind"].split("::")[-1]
        inputs = {tuple(out["shape"]) for pred in G.predecessors(node)
                  for out in G.nodes[pred].get("outputs", ())
                  if out.get("shape") is not None and None not in out["shape"]}
        for out in data["outputs"]:
            shape = out.get("shape")
            if out.get("type") != "Tensor" or shape is None or None in shape \
                    or not all(isinstance(d, int) for d in shape) or not out.get("dtype"):
                continue
            if mode == "trace" and shape == [] and out["dtype"] == "int64":
                continue
            if op in _NO_OP_VIEWS and tuple(shape) in inputs:
                continue
            yield op, tuple(shape), out["dtype"]


#: how each entry is handed to irviz: its Python scripted and traced by irviz, then what
#: torch.jit.script made of it (a model file's ``model = torch.jit.script(...)``: shapes
#: from running the compiled code) and, for a module, that saved and loaded as an archive
MODES = ("script", "trace", "compiled", "archive")


def _subject(model, inputs, mode, tmp_path):
    """``(what visualize takes, its mode)``; None when there is nothing to hand over."""
    if mode in ("script", "trace"):
        return model, mode
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.script(model)
    if mode == "compiled":
        return scripted, "script"
    if not isinstance(scripted, torch.jit.ScriptModule):
        return None   # a ScriptFunction saves as no archive irviz loads
    path = tmp_path / f"{len(list(tmp_path.iterdir()))}.pt"
    scripted.save(str(path))
    return str(path), "script"


@pytest.mark.slow   # ~50 s alone on 2 cores, twice that beside other work; `make test` runs it
def test_every_module_and_op_torch_compiles_renders_with_eager_shapes(tmp_path):
    counts = collections.Counter()
    skipped, errors, wrong, unshaped = [], [], [], []
    for name, make, make_inputs in ENTRIES:
        torch.manual_seed(0)
        model, inputs = make(), make_inputs()
        with torch.no_grad(), _Eager() as eager:
            model(*inputs)
        names = {op for op, _, _ in eager.seen}
        counts["entries"] += 1
        for mode in MODES:
            why = _torch_compiles(model, inputs, "trace" if mode == "trace" else "script")
            if why is not None:
                if mode in ("script", "trace"):
                    skipped.append(f"{name} ({mode}): {why}")
                continue
            try:
                subject = _subject(model, inputs, mode, tmp_path)
                if subject is None:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    views = visualize(subject[0], mode=subject[1], inputs=inputs)
                    for view in views:
                        view.dot()     # the picture's whole pipeline, layout aside
            except Exception as exc:  # noqa: BLE001 - every failure is an irviz defect here
                errors.append(f"{name} ({mode}): {type(exc).__name__}: {exc}")
                continue
            counts[f"{mode} rendered"] += 1
            for view in views:
                # compiled code's shapes come from running it: a run that failed draws none
                # and would leave nothing to compare
                errors += [f"{name} ({mode}): {note}" for note in view.capture.notes
                           if "shapes not recorded" in note]
                if mode != "trace":
                    unshaped += [f"{name} ({mode}): {node}"
                                 for node in _ran_without_a_shape(view.graph)]
                for op, shape, dtype in _drawn_shapes(view.graph, mode):
                    if op not in names:
                        continue
                    counts["shapes compared"] += 1
                    if (op, shape, dtype) not in eager.seen:
                        wrong.append(f"{name} ({mode}): {op} drawn {shape} {dtype}")
    print(f"\nbreadth corpus: {dict(counts)}, skipped by torch {len(skipped)}, internal "
          f"errors {len(errors)}, wrong shapes {len(wrong)}")
    for line in skipped:
        print("  skipped", line)
    assert not errors, "\n".join(errors)
    assert not wrong, "\n".join(wrong)
    assert not unshaped, "\n".join(unshaped)
    assert counts["entries"] == len(ENTRIES) >= 160
    assert counts["script rendered"] >= 160 and counts["trace rendered"] >= 160
    assert counts["compiled rendered"] == counts["script rendered"]
    assert counts["archive rendered"] >= 120
    assert counts["shapes compared"] >= 1300


def _pow_and_indexing(x, w):
    return (x ** 2) @ w[0] + torch.matmul(x, w[1]).relu()


def test_operators_and_indexing_get_shapes_from_the_users_line():
    """``x ** 2`` (pow from Tensor.__pow__ in eager) and ``w[0]`` (select): the compiled run
    records each node itself, several on one line; matmul stays one op."""
    [view] = visualize(_pow_and_indexing, inputs=(torch.rand(3, 4), torch.rand(2, 4, 5)))
    shapes = {}
    for _, data in view.graph.nodes(data=True):
        shapes.setdefault(data["kind"], []).append(data["outputs"][0].get("shape")
                                                   if data["outputs"] else None)
    assert shapes["aten::pow"] == [[3, 4]]
    assert shapes["aten::select"] == [[4, 5], [4, 5]]
    assert shapes["aten::matmul"] == [[3, 5], [3, 5]]


class _Doubler(torch.nn.Module):
    def forward(self, x):
        return x * 2


class _DirectCalls(torch.nn.Module):
    """``.forward`` called directly (an interface-typed attribute is called so): the
    compiled run records the call's ops where they ran, and none in the branch not run."""

    def __init__(self):
        super().__init__()
        self.cell, self.other = _Doubler(), _Doubler()

    def forward(self, x, flag: bool = False):
        y = self.cell.forward(x[0]) + 1
        if flag:
            y = self.other.forward(x[:, :2])   # not run: no shape
        return y


def test_a_directly_called_forward_gets_shapes_and_one_not_run_none():
    [view] = visualize(_DirectCalls(), inputs=(torch.rand(3, 4),))
    mul = [(d["scope"], d["outputs"][0]["shape"]) for _, d in view.graph.nodes(data=True)
           if d["kind"] == "aten::mul"]
    assert mul == [("cell", [4]), ("other", None)]
