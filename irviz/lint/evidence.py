"""What a source finding needs before a user sees it: evidence from the run.

The source (``ast``) layer reads code and guesses which names hold tensors. When the model
ran, the run says more than the guess, and this module weighs the two (docs/lint.md:
"A finding needs evidence"):

1. **Arguments** (:func:`signature_facts`): the ``forward`` parameters the example inputs
   do not pass are what the trace fixes to their defaults (IRV122), one finding per
   signature naming them all; a non-tensor flag the inputs do not pass is that same fact,
   not a second one (IRV123 is kept for the non-tensor arguments the inputs do pass).
2. **Rules torch warns about** (:data:`WARNED`: tensor to bool/number, iteration,
   ``len``, NumPy, ``torch.tensor``): torch raises a TracerWarning every time a traced
   tensor is turned into a Python value. A source finding of one of these on a line the
   trace ran *without* a warning there was not about a traced tensor (``not skip or
   synced_gpus``, the half of ``x.dtype == torch.float16 and not x.isfinite().all()`` an
   fp32 model never evaluates): it is left out, unless another layer (script-vs-trace,
   retrace) found something on that line.
3. **Rules torch never warns about** (IRV102 metadata branch, IRV131 ``self.training``
   branch, IRV133 side effect, ...): no runtime layer confirms them line by line. In the
   user's own files they are shown (the user can act on them); in an installed library
   (site-packages) a finding only the source layer names is left out by default and
   counted in a note: ``--show-unconfirmed`` (``show-unconfirmed = true``) shows them.
   A counterexample the verification put on it (:mod:`irviz.lint.layers.verify`) confirms
   it, whatever layer found it.
   A ``self.training`` branch counts as confirmed when a module defined in that file was
   in training mode while traced (an eval-mode trace records the branch deployment takes).

Every TracerWarning torch raised stays visible (:func:`unreported_warnings`): a finding
of this module's leaving out never carries one (a warning on the line confirms it), and
a warning no finding stands for (torch's "torch.tensor results are registered as
constants" on constant data) is named in a note.
"""
from __future__ import annotations

import inspect
import os
import re
from dataclasses import dataclass
from typing import Any, Iterable

from ..paths import display_path, is_installed_library_file
from .rules.tracing import (DefaultArgBaked, DictOrNonTensorOutput, LenOfTensor, ListOutput,
                            NonTensorInput, NumpyInTrace, ShapeSpecializedTrace,
                            TensorConstructorConstant, TensorIteration, TensorToPythonBool,
                            TensorToPythonNumber, TraceScriptDivergence, TrainingFlagBranch)
from .source.checker import SourceFinding

__all__ = ["WARNED", "SignatureFact", "signature_facts", "weigh", "unreported_warnings"]

#: source rules whose pitfall makes torch raise a TracerWarning where it happens
WARNED = frozenset(r.code for r in (TensorToPythonBool, TensorIteration, LenOfTensor,
                                    TensorToPythonNumber, NumpyInTrace,
                                    TensorConstructorConstant))
#: the model's interface (its arguments and outputs): judged against the example inputs
#: and the trace's outputs, wherever the model's code lives
INTERFACE = frozenset(r.code for r in (DefaultArgBaked, NonTensorInput, ListOutput,
                                       DictOrNonTensorOutput))
#: findings of other layers that confirm a source finding on the same line: a second trace
#: on other shapes that changed there confirms anything; the scripted graph keeping a
#: branch the trace froze confirms that *something* was frozen (a dtype, ``self.training``),
#: not that it was tensor data (every ``and``/``or`` is an ``if`` in TorchScript)
CONFIRMING = frozenset({ShapeSpecializedTrace.code, TraceScriptDivergence.code})
CONFIRMING_DATA = frozenset({ShapeSpecializedTrace.code})


# --------------------------------------------------------------------------- arguments

@dataclass(frozen=True)
class SignatureFact(SourceFinding):
    """A source finding about several parameters of one signature, with the message
    fields beyond ``expr`` (``them``)."""

    fields: tuple = ()


_NAME = re.compile(r"^\**\s*([A-Za-z_]\w*)")


def _param_name(fact: SourceFinding) -> str:
    m = _NAME.match(fact.detail)
    return m.group(1) if m else fact.detail


def _names(names: list[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:4])
    if len(names) > 4:
        shown += ", ..."
    return shown + (f" ({len(names)})" if len(names) > 1 else "")


def forward_of(obj: Any) -> Any:
    """The callable the example inputs call: a module's ``forward``, or the function."""
    forward = getattr(obj, "forward", None)
    return forward if forward is not None and callable(forward) else obj


def signature_facts(facts: Iterable[SourceFinding], inputs: Any, obj: Any
                    ) -> list[SourceFinding]:
    """``facts`` with the parameter findings (IRV122, IRV123) of each signature merged into
    one per rule. With example ``inputs`` (an :class:`~irviz.frontends.inputs.ExampleInputs`)
    only the parameters they do not pass are IRV122, and a non-tensor parameter they do not
    pass is left to IRV122; without inputs every defaulted parameter is."""
    facts = list(facts)
    params = [f for f in facts if f.rule in (DefaultArgBaked, NonTensorInput)]
    if not params:
        return facts
    passed = None
    if inputs is not None:
        try:
            passed = inputs.passed(forward_of(obj))
        except Exception:  # noqa: BLE001 - a signature inspect cannot read
            passed = None
    out = [f for f in facts if f.rule not in (DefaultArgBaked, NonTensorInput)]
    by_function: dict[tuple, list[SourceFinding]] = {}
    for f in params:
        by_function.setdefault((f.path, f.function), []).append(f)
    for group in by_function.values():
        group.sort(key=lambda f: (f.line, f.column))
        defaulted = [f for f in group if f.rule is DefaultArgBaked]
        fixed = [f for f in defaulted if passed is None or _param_name(f) not in passed]
        fixed_names = {_param_name(f) for f in fixed}
        nontensor = [f for f in group if f.rule is NonTensorInput
                     and _param_name(f) not in fixed_names]
        if fixed:
            names = [_param_name(f) for f in fixed]
            many = len(names) > 1
            if passed is not None:
                expr = (f"arguments {_names(names)} are" if many else
                        f"argument {_names(names)} is") + " not in the example inputs"
                them = "them to their defaults" if many else "it to its default"
            else:
                expr = (f"arguments {_names(names)} have defaults" if many else
                        f"argument `{fixed[0].detail}` has a default")
                them = ("them to the values used while tracing" if many else
                        "it to the value used while tracing")
            out.append(_merged(DefaultArgBaked, fixed[0], expr, them))
        if nontensor:
            names = [_param_name(f) for f in nontensor]
            if len(names) > 1:
                expr, them = f"arguments {_names(names)} are not tensors", "their values"
            else:
                expr, them = f"argument `{nontensor[0].detail}` is not a tensor", "its value"
            out.append(_merged(NonTensorInput, nontensor[0], expr, them))
    return out


def _merged(rule, first: SourceFinding, expr: str, them: str) -> SignatureFact:
    return SignatureFact(rule, first.path, first.line, first.column, first.end_line,
                         first.end_column, expr, first.function, first.evidence,
                         fields=(("them", them),))


# --------------------------------------------------------------------------- evidence

def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(os.path.abspath(path)))


def _warned_lines(warnings: Iterable) -> set[tuple[str, int]]:
    """``(display path, line)`` of every TracerWarning torch raised."""
    return {(display_path(w.filename), int(w.lineno)) for w in warnings
            if w.category == "TracerWarning"}


def _training_files(obj: Any) -> set[str]:
    """The files defining a module of ``obj`` that was in training mode."""
    import torch

    if not isinstance(obj, torch.nn.Module):
        return set()
    files = set()
    for module in obj.modules():
        if module.training:
            try:
                files.add(_real(inspect.getsourcefile(type(module)) or ""))
            except (TypeError, OSError):
                continue
    return files


@dataclass
class Weighed:
    """What :func:`weigh` left out, by reason."""

    no_warning: int = 0
    unconfirmed: int = 0

    def notes(self, spec: str) -> list[str]:
        out = []
        if self.no_warning:
            out.append(f"{spec}: {self.no_warning} source finding(s) on lines the trace ran "
                       "without a TracerWarning left out (the values were not traced tensors)")
        if self.unconfirmed:
            out.append(f"{spec}: {self.unconfirmed} unconfirmed source finding(s) in library "
                       "code left out (--show-unconfirmed shows them)")
        return out


def weigh(found: dict, obj: Any, trace: Any, warnings: Iterable, show_unconfirmed: bool
          ) -> Weighed:
    """Drop from ``found`` (the runner's ``(code, path, line) -> Diagnostic``) the source
    findings the run contradicts or does not confirm (the module docstring's rules 2 and 3).

    ``trace``: the trace's capture (None when there is none: rule 2 needs its run);
    ``warnings``: every warning torch raised while tracing (a failed trace's too)."""
    weighed = Weighed()
    warned = _warned_lines(warnings)
    confirmed = {(p, line) for (code, p, line) in found if code in CONFIRMING}
    confirmed_data = {(p, line) for (code, p, line) in found if code in CONFIRMING_DATA}
    ran = None
    if trace is not None and trace.eager is not None and not trace.eager.error:
        executed = {}
        for filename, line in trace.executed_lines or ():
            executed.setdefault(_real(filename), set()).add(line)
        ran = executed
    training = None
    for key, d in list(found.items()):
        code, path, line = key
        if tuple(d.layers) != ("ast",) or code in INTERFACE:
            continue
        if d.evidence is not None and d.evidence.verdict == "counterexample":
            continue  # an input on which the trace breaks here: the strongest evidence
        lines = range(line, (d.end_line or line) + 1)
        if (path, line) in warned:
            continue  # torch warned here (the trace layer folded its warning into this)
        if code in WARNED:
            if any((path, n) in warned or (path, n) in confirmed_data for n in lines):
                continue  # the conversion is on another line of the statement, or a
                # re-trace on other shapes changed there
            if ran is not None and _watched(path) and any(
                    n in ran.get(_real(path), ()) for n in lines):
                del found[key]
                weighed.no_warning += 1
            continue
        if show_unconfirmed or not code.startswith("IRV1") \
                or not is_installed_library_file(path) \
                or any((path, n) in confirmed for n in lines):
            continue
        if code == TrainingFlagBranch.code:
            if training is None:
                training = _training_files(obj)
            if _real(path) in training:
                continue  # traced in training mode: the branch deployment takes is not this
        del found[key]
        weighed.unconfirmed += 1
    return weighed


def _watched(path: str) -> bool:
    from ..frontends.eager_run import LineRecorder

    return LineRecorder.watches(path)


def unreported_warnings(found: dict, warnings: Iterable) -> list[tuple[str, str]]:
    """``(path:line, message)`` of each TracerWarning torch raised in the model's code (or
    a library it calls) that no finding stands for."""
    lines = {(p, line) for (_code, p, line) in found}
    out = []
    for w in warnings:
        if w.category != "TracerWarning" or w.origin is not None or not w.in_user_code:
            continue
        where = (display_path(w.filename), int(w.lineno))
        if where not in lines:
            out.append((f"{where[0]}:{where[1]}", w.message.splitlines()[0]))
            lines.add(where)
    return out
