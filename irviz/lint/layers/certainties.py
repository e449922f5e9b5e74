"""The ``certain`` layer: facts of the trace no input can change, so they need no
counterexample (docs/lint.md: the evidence ladder).

* a list or dict example input: the trace fixes its length and keys (IRV124);
* an output holding no tensor (``return None``): ``torch.jit.trace`` refuses it (IRV141);
* an op recorded with its training flag on, from a module left in training mode or from a
  functional call whose ``training`` defaults to True (``F.dropout``) (IRV130), when the
  flag changes what the op computes (a norm with running statistics, dropout with p > 0);
  a module left in training mode is checked by execution: the eval-mode model must give
  another output than the trace on the example inputs;
* a device read from an input (``x.device``) recorded as a constant (IRV121).
"""
from __future__ import annotations

import warnings

import networkx as nx
import torch

from ...analyses.traced_control_flow import constant_arg, training_flag_matters
from ...frontends.verification import Preserved
from ...paths import is_installed_library_file
from ..diagnostic import Evidence
from ..rules.tracing import (ContainerInput, DictOrNonTensorOutput, InputDeviceBaked,
                             TracedInTrainingMode)
from ..source.statements import reads_attribute
from .context import (LayerContext, code_at as _code_at,
                      forward_location as _forward_location, split_where as _split)

#: the training flag of each op that behaves differently in training
TRAINING_OPS = {"aten::dropout": "train", "aten::feature_dropout": "train",
                "aten::alpha_dropout": "train", "aten::feature_alpha_dropout": "train",
                "aten::batch_norm": "training", "aten::instance_norm": "use_input_stats",
                "aten::rrelu": "training"}
_FUNCTIONAL = {"aten::dropout": "F.dropout", "aten::feature_dropout": "F.dropout2d",
               "aten::alpha_dropout": "F.alpha_dropout",
               "aten::feature_alpha_dropout": "F.feature_alpha_dropout",
               "aten::batch_norm": "F.batch_norm", "aten::instance_norm": "F.instance_norm",
               "aten::rrelu": "F.rrelu"}


def run(ctx: LayerContext) -> None:
    """Report the certainties of the trace (it needs one)."""
    _container_inputs(ctx)
    _no_tensor_output(ctx)
    _training_ops(ctx)
    _baked_devices(ctx)


def _report(ctx: LayerContext, rule, where: tuple, **fields) -> None:
    """A finding of a certain rule: the settle layer gives it its verdict."""
    ctx.findings.report(rule, where, "ir", **fields)


def _container_inputs(ctx: LayerContext) -> None:
    inputs = ctx.run.trace.inputs
    where = _forward_location(ctx.target)
    if inputs is None or where is None:
        return
    for name, value in zip(inputs.names(ctx.target.obj), inputs.flat):
        if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
            kind = "list" if isinstance(value, list) else "tuple"
            _report(ctx, ContainerInput, where, expr=name,
                    what=f"a {kind} of {len(value)} tensors", fixed=f"length at {len(value)}")
        elif isinstance(value, dict):
            keys = ", ".join(map(str, list(value)[:4])) + (", ..." if len(value) > 4 else "")
            _report(ctx, ContainerInput, where, expr=name,
                    what=f"a dict of {len(value)} tensors", fixed=f"keys ({keys})")


def _no_tensor_output(ctx: LayerContext) -> None:
    adapter = ctx.run.trace.adapter
    leaves = adapter.outputs if adapter is not None else None
    if leaves is None or leaves.names:
        return
    if any(key[0] == DictOrNonTensorOutput.code for key in ctx.findings.found):
        return  # the source layer named the return statement: that is the place
    where = _forward_location(ctx.target)
    if where is not None:
        what = ", ".join(kind for _, kind in leaves.dropped) or "nothing"
        _report(ctx, DictOrNonTensorOutput, where, expr=f"forward (returns {what})")


def _training_modules(obj) -> dict[str, str]:
    """``{path: class name}`` of the submodules in training mode whose ops differ in eval."""
    if not isinstance(obj, torch.nn.Module):
        return {}
    kinds = (torch.nn.modules.dropout._DropoutNd, torch.nn.modules.batchnorm._BatchNorm,
             torch.nn.modules.instancenorm._InstanceNorm, torch.nn.RReLU)
    return {name: type(m).__name__ for name, m in obj.named_modules()
            if isinstance(m, kinds) and m.training}


def _training_ops(ctx: LayerContext) -> None:
    G = ctx.run.trace_graph
    training = _training_modules(ctx.target.obj)
    forward = _forward_location(ctx.target)
    in_training = []   # findings on modules left in training mode: checked by execution
    for _, data in G.nodes(data=True):
        kind = data["kind"]
        if kind not in TRAINING_OPS or constant_arg(G, data, TRAINING_OPS[kind]) not in (
                "True", "1") or not training_flag_matters(G, data):
            continue
        where = _split(data.get("user_source")) or forward
        if where is None:
            continue
        scope = data.get("scope")
        if scope in training:
            who = (f"module `{scope}` ({training[scope]}) was in training mode; call "
                   ".eval() on the model before tracing")
            expr = f"self.{scope}" if scope else kind
            in_training.append((where, expr, who))
            continue
        elif kind == "aten::batch_norm" or scope in ("", None) or not training:
            if kind == "aten::batch_norm" and scope:
                continue  # a norm module in eval mode records training=False
            who = (f"{_FUNCTIONAL[kind]} is called with training=True (its default); pass "
                   "training=self.training")
            expr = _code_at(where).strip() or _FUNCTIONAL[kind]
        else:
            continue
        _report(ctx, TracedInTrainingMode, where, expr=expr, who=who)
    if in_training and not _eval_model_gives_the_trace(ctx):
        for where, expr, who in in_training:
            _report(ctx, TracedInTrainingMode, where, expr=expr, who=who)


def _eval_model_gives_the_trace(ctx: LayerContext) -> bool:
    """Whether the model in eval mode (the mode it is deployed in) gives the trace's
    output on the example inputs: then the training flags the trace recorded did not
    change the result, and "traced in training mode" is no certainty. Runs on the
    example under one seed, with the model's state (modes, buffers) put back."""
    trace = ctx.run.trace
    obj = ctx.target.obj
    if trace.inputs is None or not isinstance(obj, torch.nn.Module):
        return False
    with Preserved(obj), warnings.catch_warnings(), torch.no_grad(), \
            torch.random.fork_rng(devices=[]):
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        got = trace.run(trace.inputs)
        obj.eval()
        torch.manual_seed(0)
        try:
            want = trace.run_python(trace.inputs)
        except Exception:  # noqa: BLE001 - the model's own error in eval mode: no refutation
            return False
    try:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)
    except (AssertionError, TypeError, ValueError):   # other values, shapes or structure
        return False
    return True


_LIBRARY_DEVICE = ("the installed library reads the input's device here: a trace serves the "
                   "device it was made on; trace on the device you deploy")


def _baked_devices(ctx: LayerContext) -> None:
    G = ctx.run.trace_graph
    for _, data in G.nodes(data=True):
        where = _split(data.get("user_source"))
        if where is None:
            continue
        device = constant_arg(G, data, "device")
        if device in (None, "None") or not reads_attribute(where[0], where[1], "device"):
            continue
        if not is_installed_library_file(where[0]):
            _report(ctx, InputDeviceBaked, where, expr=_code_at(where).strip(),
                    device=f"`{device}`")
            continue
        # a library's own device reads: every trace has them, and the answer is one for
        # the whole model (trace on the device you deploy), so they are info
        ctx.findings.report(InputDeviceBaked, where, "ir", expr=_code_at(where).strip(),
                            device=f"`{device}`")
        key = (InputDeviceBaked.code, ctx.findings.key_path(where[0]), int(where[1]))
        ctx.findings.attach(key, Evidence("held", _LIBRARY_DEVICE, reason=_LIBRARY_DEVICE))
