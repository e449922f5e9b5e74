"""A model as deployment optimizes it: frozen, ``optimize_for_inference``, ``optimize_for_mobile``.

``irviz diff model.py:Net --right-optimize freeze`` compares a model with what an
optimization makes of it. Both sides come from here, from copies, so the user's module is
never put in eval mode or frozen: the left is the model scripted in eval mode (what the
optimizations start from: freezing refuses a module in training mode, and a batch norm in
training mode is a different graph), the right the optimized copy of it.

``optimize_for_inference`` results cannot be saved (their MKLDNN constants do not
serialize), so this is the one way to draw them from the command line. ``optimize_for_mobile``
needs a torch built with XNNPACK; without it torch's internal assert becomes a clear error.
"""
from __future__ import annotations

import copy
from dataclasses import replace

import torch

from ..errors import CaptureError
from .overloads import overload_names
from .records import Target

__all__ = ["OPTIMIZATIONS", "optimized_pair"]

#: ``--right-optimize`` values -> what torch does
OPTIMIZATIONS = {
    "freeze": "torch.jit.freeze",
    "inference": "torch.jit.optimize_for_inference",
    "mobile": "torch.utils.mobile_optimizer.optimize_for_mobile",
}


def _scripted_eval(target: Target):
    """A scripted copy of the model in eval mode."""
    obj = target.obj
    if isinstance(obj, torch.jit.ScriptModule):
        module = copy.deepcopy(obj)   # its own weights: freezing folds them
    elif isinstance(obj, torch.nn.Module):
        try:
            module = torch.jit.script(copy.deepcopy(obj))
        except Exception as exc:  # noqa: BLE001 - torch raises many types
            raise CaptureError(f"torch.jit.script failed on {target.spec}: "
                               f"{str(exc).strip().splitlines()[0]}",
                               hint="an optimization starts from the scripted model; "
                                    "irviz render shows why it does not script") from None
    else:
        raise CaptureError(f"{target.spec} is a function; the deployment optimizations "
                           "take a module", hint="name an nn.Module, a factory of one or a "
                                                 ".pt archive")
    return module.eval()


def _optimize(module, how: str):
    overloads = overload_names(module)
    if how == "freeze":
        # freeze keeps (and folds) forward only: a scripted nn.LSTM has forward__0 and
        # forward__1 instead, which it would leave as they were
        return torch.jit.freeze(module, preserved_attrs=overloads or None)
    if overloads:
        raise CaptureError(
            f"{OPTIMIZATIONS[how]} optimizes forward, and this module's forward is "
            f"overloaded ({', '.join(overloads)}): torch refuses it", hint="--right-optimize "
            "freeze takes the overloads")
    if how == "inference":
        return torch.jit.optimize_for_inference(module)
    from torch.utils.mobile_optimizer import optimize_for_mobile

    try:
        return optimize_for_mobile(module)
    except RuntimeError as exc:
        if "XNNPACK" in str(exc):
            raise CaptureError(
                f"this torch ({torch.__version__}) was built without XNNPACK, which "
                "optimize_for_mobile needs", hint="use --right-optimize freeze or inference "
                "here, or run on a torch build with XNNPACK (torch.backends.xnnpack.enabled)"
            ) from None
        raise


def optimized_pair(target: Target, how: str) -> tuple[Target, Target]:
    """``(the model scripted in eval mode, the same optimized by `how`)`` as targets of
    their own (``script_module``), sharing the original's file for source lines."""
    if how not in OPTIMIZATIONS:
        raise CaptureError(f"unknown optimization {how!r}; choose one of "
                           f"{', '.join(OPTIMIZATIONS)}")
    left = _scripted_eval(target)
    try:
        right = _optimize(_scripted_eval(target), how)
    except CaptureError:
        raise
    except Exception as exc:  # noqa: BLE001 - torch's passes raise many types
        raise CaptureError(f"{OPTIMIZATIONS[how]} failed on {target.spec}: "
                           f"{str(exc).strip().splitlines()[0]}") from None
    base = dict(kind="script_module", compilation_unit=target.compilation_unit)
    return (replace(target, obj=left, name=f"{target.name} (eval)", **base),
            replace(target, obj=right, name=f"{target.name} ({how})",
                    spec=f"{target.spec} --right-optimize {how}", **base))
