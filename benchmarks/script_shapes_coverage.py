"""Script mode with example inputs: how many values that ran have a shape, and whether each
drawn shape is one eager PyTorch computed (issue 44).

    .venv/bin/python benchmarks/script_shapes_coverage.py --corpus breadth
    PYTHONPATH=build/corpus-site .venv/bin/python benchmarks/script_shapes_coverage.py \\
        --corpus opinfo,moduleinfo                       # torch's fixtures (needs expecttest)
    eval "$(../shared/tools/torchvision-cpu/build.sh build/cudastub)"
    PYTHONPATH=build/corpus-site .venv/bin/python benchmarks/script_shapes_coverage.py \\
        --corpus timm                                    # timm's models (needs torchvision)

Every case is a *Python* model (a module, or a function in a generated file) handed to
``irviz.visualize(..., mode="script", inputs=...)``, as a user's model file is. The corpora:

* ``breadth``: ``tests/corpus/nn_breadth.py``, every entry torch scripts;
* ``opinfo``: torch's OpInfo fixtures (``op_db``): each op's first float32 CPU sample whose
  eager output is one tensor, called as ``torch.<name>(...)`` from a generated function, as
  torch's own ``test_ops_jit`` scripts it (``jit_metaprogramming_utils.get_call``);
* ``moduleinfo``: torch's ModuleInfo fixtures (``module_db``): each module's first sample
  with positional tensor inputs and one tensor output;
* ``timm``: small timm models built as timm's ``test_model_forward_torchscript`` builds
  them (``set_layer_config(scriptable=True)``, eval mode), on a 1x3x64x64 image (vision
  transformers: ``img_size=64``).

Counted on each picture's aten nodes (not hidden) and their tensor outputs:

* ``values``: drawn tensor outputs; ``not run``: those inside an ``if`` block or loop body
  the compiled run says did not run (``blocks[cid]["runs"] == 0``); ``shaped``: with a
  shape. Coverage is ``shaped / (values - not run)``: the share of the values that ran.
  A checkout without block counts (``PYTHONPATH`` of an older irviz) counts none as not
  run, so its coverage is over every value (the ``shaped / values`` column compares both);
* ``disagree``: a drawn complete shape ``(op, shape, dtype)`` that an eager dispatch
  recorder (a ``TorchDispatchMode`` sharing no code with irviz) did not see, for the ops
  eager dispatch runs under the same name (as ``tests/test_nn_breadth.py`` compares), nor
  the same recorder around torch's own scripted copy of the model (the compiled code may
  run other ops than the Python: ``1 - t`` scripts to ``neg`` + ``add``, eager runs
  ``rsub``; those are counted apart, as "not in eager, in the scripted run");
* ``output``: cases whose returned tensor is drawn with its shape;
* ``timm`` also: each module call's drawn result (``returned_shape``) against what a
  forward hook saw for that module (modules called more than once with different
  shapes are left out).

Crashes (an exception out of ``visualize``) are listed; cases torch itself cannot script or
run are skipped and counted.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT  # noqa: E402

TIMM_MODELS = (
    "resnet10t", "resnet18", "resnet26d", "resnext26ts", "seresnext26d_32x4d",
    "regnetx_002", "regnety_002", "mobilenetv2_050", "mobilenetv3_small_050",
    "mobilenetv3_large_100", "efficientnet_b0", "efficientnet_lite0", "mnasnet_050",
    "ghostnet_050", "tinynet_e", "lcnet_050", "fbnetv3_b", "hardcorenas_a", "spnasnet_100",
    "densenet121", "dla34", "dpn48b", "vovnet39a", "ese_vovnet19b_dw", "cspresnet50",
    "darknet17", "rexnet_100", "res2net50_14w_8s", "selecsls42b", "hrnet_w18_small",
    "convnext_atto", "convmixer_768_32", "mixer_s32_224", "resmlp_12_224",
    "vit_tiny_patch16_224", "deit_tiny_patch16_224", "pit_ti_224", "levit_128s",
    "xcit_nano_12_p16_224", "cait_xxs24_224",
)
#: transformers take the image size as an argument (timm's tests script them at theirs)
_SIZED = ("vit_", "deit_", "pit_", "levit_", "xcit_", "cait_", "mixer_", "resmlp_")


class _Eager:
    """What eager PyTorch dispatched: ``(op name, shape, dtype)`` of every tensor output."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        seen = self.seen = set()

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                import torch

                out = func(*args, **(kwargs or {}))
                name = func._schema.name.split("::")[-1]
                for value in out if isinstance(out, (tuple, list)) else (out,):
                    if isinstance(value, torch.Tensor):
                        seen.add((name, tuple(value.shape), str(value.dtype)[6:]))
                return out

        self.mode = Mode()

    def run(self, fn, inputs):
        import torch

        with torch.no_grad(), self.mode:
            return fn(*inputs)


#: ops a compiled graph runs that eager skips when they change nothing (``x[:, :2]``
#: dispatches no slice of dim 0); compared only when the shape changes
_NO_OP_VIEWS = ("slice", "contiguous", "to", "view", "reshape", "expand", "alias",
                "type_as", "view_as", "reshape_as", "expand_as", "flatten", "clone",
                "detach", "_autocast_to_reduced_precision", "dropout", "feature_dropout",
                "alpha_dropout")


def _not_run(blocks: dict, block: str | None) -> bool:
    while block is not None:
        info = blocks[block]
        if info.get("runs") == 0:
            return True
        block = info["parent"]
    return False


def count_picture(G, eager: set, compiled: set) -> collections.Counter:
    """The counts of one picture (see the module docstring)."""
    counts = collections.Counter()
    names = {op for op, _, _ in eager}
    blocks = G.graph["blocks"]
    for node, data in G.nodes(data=True):
        if not data["kind"].startswith("aten::") or data.get("hidden"):
            continue
        op = data["kind"].split("::")[-1]
        not_run = _not_run(blocks, data.get("block"))
        inputs = {tuple(out["shape"]) for pred in G.predecessors(node)
                  for out in G.nodes[pred].get("outputs", ())
                  if out.get("shape") is not None and None not in out["shape"]}
        for out in data["outputs"]:
            if out.get("type") != "Tensor":
                continue
            counts["values"] += 1
            counts["not run"] += not_run
            shape = out.get("shape")
            if shape is None:
                if not not_run:
                    counts["missing"] += 1
                continue
            counts["shaped"] += 1
            if None in shape or not out.get("dtype") or op not in names:
                continue
            if op in _NO_OP_VIEWS and tuple(shape) in inputs:
                continue
            counts["compared"] += 1
            key = (op, tuple(shape), out["dtype"])
            if key not in eager:
                counts["disagree"] += key not in compiled
                counts["not in eager, in the scripted run"] += key in compiled
    return counts


def _returned_shaped(G) -> bool:
    """The value the picture returns has a shape (its producer's output, or the edge)."""
    for pred in G.predecessors("out"):
        for out in G.nodes[pred].get("outputs", ()):
            if out.get("type") == "Tensor" and out.get("shape") is not None:
                return True
        if G.edges[pred, "out"].get("shape") is not None:
            return True
    return False


def _torch_scripts(obj):
    """torch's own ``torch.jit.script(obj)``, or None when it cannot."""
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.jit.script(obj)
    except Exception:  # noqa: BLE001 - torch raises many types
        return None


def _case(name, obj, inputs, totals, problems, hooks: bool = False) -> None:
    """Draw one Python model in script mode and count its picture."""
    import torch

    from irviz.api import visualize

    torch.manual_seed(0)
    eager = _Eager()
    try:
        out = eager.run(obj, inputs)
    except Exception:  # noqa: BLE001 - the fixture does not run eagerly here
        totals["skipped (eager raises)"] += 1
        return
    if not isinstance(out, torch.Tensor):
        totals["skipped (not one tensor out)"] += 1
        return
    scripted = _torch_scripts(obj)
    if scripted is None:
        totals["skipped (torch does not script it)"] += 1
        return
    # what the scripted code dispatched: where it runs other ops than the Python (``1 - t``
    # scripts to neg + add, eager runs rsub), the eager record alone cannot confirm a shape
    compiled = _Eager()
    try:
        compiled.run(scripted, inputs)
    except Exception:  # noqa: BLE001 - the scripted code raises where the Python did not
        totals["skipped (scripted code raises)"] += 1
        return
    truth = _hook_shapes(obj, inputs) if hooks else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            [view] = visualize(obj, mode="script", inputs=tuple(inputs))
            view.dot()
    except Exception as exc:  # noqa: BLE001 - every failure here is an irviz defect
        problems.append(f"{name}: CRASH {type(exc).__name__}: {str(exc)[:200]}")
        totals["crashes"] += 1
        if totals["crashes"] <= 3:
            traceback.print_exc()
        return
    totals["cases"] += 1
    if _DUMP is not None:
        _DUMP[name] = {n: [o.get("shape") for o in d["outputs"]]
                       for n, d in view.graph.nodes(data=True) if d["kind"].startswith("aten::")}
    counts = count_picture(view.graph, eager.seen, compiled.seen)
    totals.update(counts)
    totals["output shaped"] += _returned_shaped(view.graph)
    if counts["missing"]:
        missing = [d["kind"] for _, d in view.graph.nodes(data=True)
                   if d["kind"].startswith("aten::") and not d.get("hidden")
                   and any(o.get("type") == "Tensor" and o.get("shape") is None
                           for o in d["outputs"])
                   and not _not_run(view.graph.graph["blocks"], d.get("block"))]
        problems.append(f"{name}: {counts['missing']} without a shape ({', '.join(missing[:6])})")
    if counts["disagree"]:
        problems.append(f"{name}: {counts['disagree']} drawn shapes eager never produced")
    if truth is not None:
        _compare_hooks(name, view.graph, truth, totals, problems)


def _hook_shapes(model, inputs) -> dict[str, str]:
    """Module path -> the shape its forward returned, when every call agreed."""
    import torch

    from irviz.ir.model import format_shape, tensor_info

    paths = {id(m): name for name, m in model.named_modules()}
    seen: dict[str, set] = {}

    def hook(module, _args, out):
        if isinstance(out, torch.Tensor) and id(module) in paths:
            seen.setdefault(paths[id(module)], set()).add(format_shape(tensor_info(out)))

    handles = [m.register_forward_hook(hook) for m in model.modules()]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    return {path: shapes.pop() for path, shapes in seen.items() if len(shapes) == 1}


def _compare_hooks(name, G, truth, totals, problems) -> None:
    from irviz.ir.model import returned_shape

    for cid, info in G.graph["blocks"].items():
        if info["kind"] != "method" or info.get("method") != "forward":
            continue
        path = info.get("module")
        if path not in truth:
            continue
        if _not_run(G.graph["blocks"], info["parent"]):   # a call the run did not make
            totals["module calls not run"] += 1
            if returned_shape(G, cid) is not None:
                problems.append(f"{name}: {path} did not run, drawn {returned_shape(G, cid)}")
            continue
        drawn = returned_shape(G, cid)
        totals["module calls compared"] += 1
        if drawn != truth[path]:
            totals["module calls differing"] += 1
            problems.append(f"{name}: {path or '<root>'} drawn {drawn}, hook {truth[path]}")


# -- the corpora ---------------------------------------------------------------------------

def breadth(totals, problems) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "corpus"))
    from nn_breadth import ENTRIES

    for name, make, make_inputs in ENTRIES:
        import torch

        torch.manual_seed(0)
        _case(name, make(), make_inputs(), totals, problems)


def _literal(value) -> str | None:
    """Source text of a non-tensor argument, or None when it has none TorchScript reads."""
    import torch

    if isinstance(value, (bool, int, float)) or value is None:
        return repr(value)
    if isinstance(value, str):
        return ascii(value)
    if isinstance(value, torch.dtype):
        return f"torch.{str(value)[6:]}"
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, bool)) for v in value):
        return repr(list(value))
    return None


def opinfo(totals, problems, limit: int | None) -> None:
    """Each OpInfo's first float32 CPU sample, as ``torch.<name>(...)`` in a generated file."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    cases, lines = [], ["import torch", "from typing import List", ""]
    for op in op_db[:limit]:
        try:
            target = eval(f"torch.{op.name}", {"torch": torch})  # noqa: S307 - torch's names
        except Exception:  # noqa: BLE001 - an op with no torch.<name> (a method only)
            totals["skipped (no torch.<name>)"] += 1
            continue
        if not callable(target) or torch.float32 not in op.supported_dtypes("cpu"):
            totals["skipped (no float32 CPU)"] += 1
            continue
        try:
            sample = next(iter(op.sample_inputs("cpu", torch.float32)))
        except Exception:  # noqa: BLE001 - a fixture that needs what this machine lacks
            totals["skipped (no sample)"] += 1
            continue
        args = [sample.input, *sample.args]
        formals, actuals, tensors = [], [], []
        for arg in args:
            if isinstance(arg, torch.Tensor):
                formals.append(f"i{len(formals)}")
                actuals.append(formals[-1])
                tensors.append(arg)
            else:
                text = _literal(arg)
                if text is None:
                    break
                actuals.append(text)
        else:
            kwargs = {k: _literal(v) for k, v in sample.kwargs.items()}
            if None in kwargs.values() and any(sample.kwargs[k] is not None for k, v in
                                               kwargs.items() if v is None):
                totals["skipped (argument with no literal)"] += 1
                continue
            call = ", ".join(actuals + [f"{k}={v}" for k, v in kwargs.items()])
            fname = f"op_{len(cases)}"
            lines += [f"def {fname}({', '.join(formals)}):",
                      f"    return torch.{op.name}({call})", ""]
            cases.append((op.name, fname, tensors))
            continue
        totals["skipped (argument with no literal)"] += 1
    module = _module_from_source("\n".join(lines))
    for name, fname, tensors in cases:
        _case(f"opinfo {name}", getattr(module, fname), tensors, totals, problems)


_KEEP: list = []
#: ``--timm``: the timm models to draw (default: TIMM_MODELS)
_ONLY: tuple = ()
#: ``--dump``: case -> node -> its outputs' shapes (to compare two checkouts' pictures)
_DUMP: dict | None = None


def _module_from_source(text: str):
    """A generated file imported as a module (TorchScript reads its functions' source)."""
    folder = Path(tempfile.mkdtemp(prefix="irviz-opinfo-"))
    path = folder / "opinfo_cases.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("opinfo_cases", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["opinfo_cases"] = module
    spec.loader.exec_module(module)
    _KEEP.append(folder)
    return module


def moduleinfo(totals, problems, limit: int | None) -> None:
    import torch
    from torch.testing._internal.common_modules import module_db

    for info in module_db[:limit]:
        try:
            samples = info.module_inputs_func(info, device="cpu", dtype=torch.float32,
                                              requires_grad=False, training=False)
        except Exception:  # noqa: BLE001 - a fixture that needs what this machine lacks
            totals["skipped (no sample)"] += 1
            continue
        for sample in samples:
            fwd = sample.forward_input
            if fwd is None or fwd.kwargs or not all(isinstance(a, torch.Tensor)
                                                     for a in fwd.args):
                continue
            try:
                torch.manual_seed(0)
                model = info.module_cls(*sample.constructor_input.args,
                                        **sample.constructor_input.kwargs).eval()
            except Exception:  # noqa: BLE001
                continue
            _case(f"moduleinfo {info.name}", model, list(fwd.args), totals, problems)
            break
        else:
            totals["skipped (no positional tensor sample)"] += 1


def timm_models(totals, problems, limit: int | None) -> None:
    import timm
    import torch
    from timm.layers import set_layer_config

    for name in (_ONLY or TIMM_MODELS)[:limit]:
        kwargs = {"img_size": 64} if name.startswith(_SIZED) else {}
        torch.manual_seed(0)
        try:
            with set_layer_config(scriptable=True):
                model = timm.create_model(name, pretrained=False, **kwargs).eval()
        except Exception as exc:  # noqa: BLE001 - a model this timm does not have
            problems.append(f"timm {name}: not built ({type(exc).__name__}: {exc})"[:200])
            totals["skipped (not built)"] += 1
            continue
        start = time.perf_counter()
        _case(f"timm {name}", model, [torch.rand(1, 3, 64, 64)], totals, problems, hooks=True)
        print(f"  timm {name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)


CORPORA = {"breadth": lambda t, p, n: breadth(t, p), "opinfo": opinfo,
           "moduleinfo": moduleinfo, "timm": timm_models}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="breadth", help=f"comma-separated: {', '.join(CORPORA)}")
    ap.add_argument("--limit", type=int, help="the first N cases of each corpus")
    ap.add_argument("--timm", help="comma-separated timm models instead of the default set")
    ap.add_argument("--dump", type=Path, help="write every aten node's shapes here (JSON)")
    args = ap.parse_args(argv)
    global _DUMP, _ONLY
    _DUMP = {} if args.dump else None
    _ONLY = tuple(args.timm.split(",")) if args.timm else ()
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    for corpus in args.corpus.split(","):
        totals, problems = collections.Counter(), []
        start = time.perf_counter()
        CORPORA[corpus](totals, problems, args.limit)
        ran = totals["values"] - totals["not run"]
        print(f"\n## {corpus} ({time.perf_counter() - start:.0f} s)")
        print(f"cases drawn {totals['cases']}, crashes {totals['crashes']}; "
              f"aten tensor values {totals['values']}, not run {totals['not run']}, "
              f"shaped {totals['shaped']} = {totals['shaped'] / max(ran, 1):.2%} of those "
              f"that ran ({totals['shaped'] / max(totals['values'], 1):.2%} of all); "
              f"compared with eager {totals['compared']}, disagree {totals['disagree']} "
              f"(not in eager, in the scripted run: "
              f"{totals['not in eager, in the scripted run']}); "
              f"returned value shaped in {totals['output shaped']} of {totals['cases']}")
        if totals["module calls compared"]:
            print(f"module calls compared with forward hooks "
                  f"{totals['module calls compared']}, differing "
                  f"{totals['module calls differing']} (calls in a branch that did not "
                  f"run, drawn without a shape: {totals['module calls not run']})")
        print("skipped: " + ", ".join(f"{k[9:-1]} {v}" for k, v in sorted(totals.items())
                                      if k.startswith("skipped")))
        for line in problems:
            print("  " + line)
    if args.dump:
        import json

        args.dump.write_text(json.dumps(_DUMP))
    return 0


if __name__ == "__main__":
    sys.exit(main())
