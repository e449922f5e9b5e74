"""Verified remedies: the fix for a trace a counterexample proved wrong, found and checked.

The tutorial's own move, when tracing would freeze control flow, is to script the small
piece that holds it and trace the rest (``MyDecisionGate`` scripted inside a traced
``MyCell``). For one finding (its line, and the counterexample that proves it), the
candidates are tried in order of preference:

1. for a finding resting on the module mode, the model traced in **eval** mode; for an
   argument the example left out, that **argument passed** in the example inputs;
2. **script the smallest submodule** holding the line: the modules whose ``forward`` was
   on the call stack when the line ran on the example, innermost first (a free function's
   line is held by the module that called it);
3. **``@torch.jit.script_if_tracing``** on the module-level function holding the line;
4. **script the whole model** (no trace left to go wrong, but no trace either).

A candidate is kept only when it verifies: the model, with the candidate applied, traced
again on the example, matches the model's Python on the example, on the finding's
counterexample and on every variant the first trace already matched
(:func:`irviz.frontends.verification.verify`, the same comparison). A variant that was a
counterexample of another finding may stay one: that finding has its own remedy, and
``irviz trace`` checks them all applied together. Every failed candidate says why
(``does not compile: ...``, ``outputs still differ on x negated: ...``).
"""
from __future__ import annotations

import contextlib
import inspect
import linecache
import os
import re
import sys
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import torch

from .capture import Capture, capture, script_compiled
from .inputs import ExampleInputs
from .records import Attempt, Remedy, SourceEdit, Target
from .source_edits import eval_in_factory
from .variants import Variant, variants
from .verification import Preserved, Verification, error_line, verify

__all__ = ["Finding", "Candidate", "search", "applied", "inputs_for", "holders", "retraced",
           "checked_on"]

#: submodules on the stack tried before the whole model (innermost first)
_SUBMODULES = 3


@dataclass(frozen=True)
class Finding:
    """What the search needs of a finding: where it is, what it rests on, and the
    counterexample (its ``change``, as the verification's variants name it)."""

    path: str
    line: int
    #: the decision it rests on (``Rule.decides``): ``mode``, ``argument``, ``value`` ...
    kind: str | None
    counterexample: str


@dataclass(frozen=True)
class Candidate:
    """One remedy to try: what it is (the record it becomes once verified, with
    ``verified_on`` still 0), and how to apply it around a trace."""

    remedy: Remedy
    #: a context manager putting the remedy on ``model`` (taken off on exit)
    apply: Callable[[Any], contextlib.AbstractContextManager]
    #: the example inputs the remedied model is traced with (None: the first trace's)
    inputs: ExampleInputs | None = None
    #: the Python model runs in eval mode too (the remedy is deploying in eval mode)
    eval_mode: bool = False
    #: the whole model scripted: no trace at all
    whole: bool = False


# -- where the line runs ----------------------------------------------------------------

@dataclass(frozen=True)
class Frame:
    """One frame on the stack when the finding's line ran: its code, and ``self`` when
    it is a method of a module."""

    code: Any
    module: torch.nn.Module | None
    globals: dict


class _StackAt:
    """The call stack the first time ``path:line`` runs: a line tracer only in frames of
    that file (the rest of the model runs at full speed)."""

    def __init__(self, path: str, line: int):
        self.path, self.line = os.path.realpath(path), line
        self.stack: list[Frame] | None = None
        self._files: dict[str, bool] = {}

    def _watched(self, filename: str) -> bool:
        if filename not in self._files:
            self._files[filename] = os.path.realpath(filename) == self.path
        return self._files[filename]

    def _call(self, frame, event, arg):
        if self.stack is None and event == "call" and self._watched(frame.f_code.co_filename):
            return self._local
        return None

    def _local(self, frame, event, arg):
        if event == "line" and frame.f_lineno == self.line and self.stack is None:
            stack, f = [], frame
            while f is not None:
                owner = f.f_locals.get("self") if "self" in f.f_code.co_varnames else None
                stack.append(Frame(f.f_code, owner if isinstance(owner, torch.nn.Module)
                                   else None, f.f_globals))
                f = f.f_back
            self.stack = stack
        return self._local if self.stack is None else None

    def __enter__(self):
        self._old = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._old)
        return False


def holders(first: Capture, path: str, line: int) -> list[Frame]:
    """The frames on the stack, innermost first, the first time the model's Python ran
    ``path:line`` on the example (empty when it did not run it)."""
    recorder = _StackAt(path, line)
    with warnings.catch_warnings(), torch.no_grad(), Preserved(first.target.obj):
        warnings.simplefilter("ignore")
        with contextlib.suppress(Exception), recorder:  # it ran in the capture already
            first.run_python(first.inputs)
    return recorder.stack or []


# -- the candidates ---------------------------------------------------------------------

def _access(name: str) -> str:
    """``model.cell.dg`` / ``model.layers[0]`` for the qualified name ``cell.dg``."""
    out = "model"
    for part in name.split(".") if name else ():
        out += f"[{part}]" if part.isdigit() else (f".{part}" if part.isidentifier()
                                                    else f"[{part!r}]")
    return out


@contextlib.contextmanager
def _scripted_in_place(root: torch.nn.Module, name: str, scripted: Any) -> Iterator[None]:
    parent_name, _, attr = name.rpartition(".")
    parent = root.get_submodule(parent_name)
    old = parent._modules[attr]
    parent._modules[attr] = scripted
    try:
        yield
    finally:
        parent._modules[attr] = old


def _script_submodule(name: str) -> Candidate:
    if not name:   # no trace left: the capture is the scripted model (:func:`_traced`)
        return Candidate(Remedy("script-submodule", "model = torch.jit.script(model)", 0, module=""),
                         lambda model: contextlib.nullcontext(), whole=True)

    def apply(model, name=name):
        return _scripted_in_place(model, name, script_compiled(model.get_submodule(name)))
    return Candidate(Remedy("script-submodule",
                            f"{_access(name)} = torch.jit.script({_access(name)})", 0,
                            module=name), apply)


@contextlib.contextmanager
def _rebound(fn: Any, new: Any) -> Iterator[None]:
    """``fn`` replaced by ``new`` in every loaded module that binds it by name."""
    places = [vars(m) for m in list(sys.modules.values())
              if m is not None and any(v is fn for v in vars(m).values())]
    names = [[k for k, v in d.items() if v is fn] for d in places]
    for d, keys in zip(places, names):
        for k in keys:
            d[k] = new
    try:
        yield
    finally:
        for d, keys in zip(places, names):
            for k in keys:
                d[k] = fn


def _module_function(frame: Frame) -> Any:
    """The module-level function whose code ``frame`` runs (None: a method, a nested
    function, a lambda, a decorated function)."""
    return next((v for v in frame.globals.values()
                 if inspect.isfunction(v) and v.__code__ is frame.code), None)


def _decorated(fn: Any) -> SourceEdit | None:
    """The edit putting ``@torch.jit.script_if_tracing`` above ``fn``'s ``def`` (None
    when the file does not bind ``torch``)."""
    if fn.__globals__.get("torch") is not torch:
        return None
    path, line = fn.__code__.co_filename, fn.__code__.co_firstlineno
    old = linecache.getline(path, line).rstrip("\n")
    indent = old[:len(old) - len(old.lstrip())]
    return SourceEdit(path, line, old, f"{indent}@torch.jit.script_if_tracing\n{old}")


def _script_if_tracing(fn: Any) -> Candidate:
    code = (f"@torch.jit.script_if_tracing on `def {fn.__name__}` "
            f"({os.path.basename(fn.__code__.co_filename)}:{fn.__code__.co_firstlineno})")

    def apply(model, fn=fn):
        script_compiled(fn)   # compiled now: an error is the candidate's, not the trace's
        return _rebound(fn, torch.jit.script_if_tracing(fn))
    return Candidate(Remedy("script-if-tracing", code, 0,
                            function=f"{fn.__module__}:{fn.__qualname__}",
                            edit=_decorated(fn)), apply)


@contextlib.contextmanager
def _in_eval(model: torch.nn.Module) -> Iterator[None]:
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, mode in modes:
            m.training = mode


def _eval(target: Target) -> Candidate:
    return Candidate(Remedy("eval", "model.eval()  # before torch.jit.trace", 0,
                            edit=eval_in_factory(target)), _in_eval, eval_mode=True)


def _pass_argument(first: Capture, variant: Variant) -> Candidate | None:
    """The example inputs with the argument the counterexample passed."""
    given = set(first.inputs.kwargs) | set(first.inputs.names(first.target.obj))
    added = [k for k in variant.inputs.kwargs if k not in given]
    if not added:
        return None
    names = variant.inputs.names(first.target.obj)
    code = (f"pass {', '.join(f'`{a}`' for a in added)} in the example inputs: "
            f"torch.jit.trace(model, ({', '.join(names)}{',' if len(names) == 1 else ''}))")
    return Candidate(Remedy("pass-argument", code, 0, arguments=tuple(added)),
                     lambda model: contextlib.nullcontext(), inputs=variant.inputs)


def candidates(first: Capture, finding: Finding, counterexample: Variant | None
               ) -> list[Candidate]:
    """The candidates for ``finding``, in order of preference."""
    root = first.target.obj
    out: list[Candidate] = []
    if finding.kind == "mode" or (counterexample is not None and counterexample.kind == "mode"):
        if isinstance(root, torch.nn.Module) and root.training:
            out.append(_eval(first.target))
    if counterexample is not None and counterexample.kind == "argument":
        passed = _pass_argument(first, counterexample)
        if passed is not None:
            out.append(passed)
    if not isinstance(root, torch.nn.Module) or isinstance(root, torch.jit.ScriptModule):
        return out
    stack = holders(first, finding.path, finding.line)
    names = {id(m): n for n, m in root.named_modules(remove_duplicate=False)}
    held = list(dict.fromkeys(names[id(f.module)] for f in stack
                              if f.module is not None and id(f.module) in names))
    out += [_script_submodule(n) for n in [n for n in held if n][:_SUBMODULES]]
    function = _module_function(stack[0]) if stack else None
    if function is not None:
        out.append(_script_if_tracing(function))
    out.append(_script_submodule(""))
    return out


class CompileError(Exception):
    """torch.jit.script refused the candidate's code (its first line)."""


def _compile_line(exc: BaseException) -> str:
    """The compiler's message, first line (its last lines quote the source)."""
    text = getattr(exc, "message", None) or str(exc)
    # the lint's own script capture names the model and the line first: the finding has both
    text = re.sub(r"^torch\.jit\.script failed on \S+(?: at \S+:\d+)?: ", "", text.strip())
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[0].rstrip(":") if lines else type(exc).__name__)[:160]


# -- verification -----------------------------------------------------------------------

def retraced(first: Capture, applying: contextlib.AbstractContextManager,
             inputs: ExampleInputs | None = None, whole: bool = False,
             scripted: Any = None) -> Capture:
    """``first``'s model traced again on ``inputs`` (default: the first trace's) inside
    ``applying`` (the remedies put on the model, taken off after: the TracedModule is made
    while they are on, and a scripted submodule lives on in it); ``whole``: the model
    scripted instead (``scripted``, when it is already), run as the trace is."""
    model = first.target.obj
    with warnings.catch_warnings(), Preserved(model):
        warnings.simplefilter("ignore")
        with applying:
            if whole:
                return replace(first, compiled=scripted or script_compiled(model),
                               _make_compiled=None, trace_graph=None)
            fixed = capture(first.target, "trace", inputs or first.inputs, lines=False)
            fixed.scripted  # noqa: B018 - made now, while the remedies are applied
    return fixed


def checked_on(first: Capture, before: Verification, inputs: ExampleInputs | None = None,
               eval_mode: bool = False) -> list[Variant]:
    """The variants a remedied trace is checked on: the valid ones of ``before`` (in eval
    mode, not the mode variants: every run is in eval mode), or, for other example
    inputs (an argument passed), their own."""
    if inputs is not None and inputs is not first.inputs:
        return variants(inputs, inputs.names(first.target.obj), {}, 16)
    return [o.variant for o in before.valid if not (eval_mode and o.variant.kind == "mode")]


def _traced(first: Capture, candidate: Candidate, scripted: Any = None) -> Capture:
    """The model traced again with ``candidate`` applied; for the whole model scripted,
    ``scripted`` when the lint scripted it already. A candidate torch.jit.script refuses
    raises :class:`CompileError`."""
    try:
        if candidate.whole:
            scripted = scripted or script_compiled(first.target.obj)
            applying = contextlib.nullcontext()
        else:
            applying = candidate.apply(first.target.obj)   # a scripted submodule compiles here
    except Exception as exc:  # noqa: BLE001 - torch.jit.script's refusal, in its words
        raise CompileError(_compile_line(exc)) from None
    return retraced(first, applying, candidate.inputs, candidate.whole, scripted)


def _checked(first: Capture, fixed: Capture, candidate: Candidate, finding: Finding,
             before: Verification, random: bool, threads: int | None = None
             ) -> tuple[int, str | None]:
    """``(inputs matched, why not)``: the remedied trace against the model's Python."""
    tried = checked_on(first, before, candidate.inputs, candidate.eval_mode)
    if candidate.inputs is not None:   # other example inputs: every one of theirs
        must = {v.change for v in tried}
    else:
        must = {o.variant.change for o in before.valid if not o.counterexample}
        must.add(finding.counterexample)
    context = _in_eval(first.target.obj) if candidate.eval_mode else contextlib.nullcontext()
    with context:
        after = verify(fixed, tried, random, threads=threads)
    if after.note:
        return 0, after.note
    for outcome in sorted(after.counterexamples, key=lambda o: o.variant.distance):
        if outcome.variant.change in must or outcome.variant.kind == "state":
            return 0, f"outputs still differ on {outcome.summary()}"
    return 1 + sum(1 for o in after.valid if not o.counterexample), None


def search(first: Capture, finding: Finding, before: Verification, random: bool = False,
           tried: dict | None = None, script: Any = None, threads: int | None = None
           ) -> tuple[Remedy | None, list[Attempt]]:
    """The first candidate for ``finding`` that verifies (None when none does), and every
    candidate that did not with why. ``before`` is the first trace's verification (its
    variants are the ones checked again); ``tried`` shares results between the findings
    of one model (a submodule scripted once); ``script`` is what scripting the whole
    model gave already (a Capture, or the CaptureError saying why it does not compile;
    None: not tried yet); ``threads``: torch's intra-op threads while the variants run
    (:func:`~irviz.frontends.verification.verify`)."""
    tried = {} if tried is None else tried
    counterexample = next((o.variant for o in before.outcomes
                           if o.variant.change == finding.counterexample), None)
    found, failed = candidates(first, finding, counterexample), []
    for candidate in found:
        key = (candidate.remedy.code, finding.counterexample)
        if key not in tried:
            tried[key] = _attempt(first, candidate, finding, before, random, script, threads)
        remedy, attempt = tried[key]
        if remedy is not None:
            return remedy, failed
        failed.append(attempt)
    if not found:
        failed.append(Attempt("(none)", "no candidate: the line did not run on the example "
                                        "inside a module or a module-level function"))
    return None, failed


def _attempt(first: Capture, candidate: Candidate, finding: Finding, before: Verification,
             random: bool, script: Any = None, threads: int | None = None
             ) -> tuple[Remedy | None, Attempt | None]:
    code = candidate.remedy.code
    if candidate.whole and isinstance(script, Exception):
        return None, Attempt(code, f"does not compile: {_compile_line(script)}")
    try:
        fixed = _traced(first, candidate, script.scripted if isinstance(script, Capture)
                        else None)
    except CompileError as exc:
        return None, Attempt(code, f"does not compile: {exc}")
    except Exception as exc:  # noqa: BLE001 - the candidate's failure, said in its words
        return None, Attempt(code, f"the trace fails: {error_line(exc)}")
    matched, why = _checked(first, fixed, candidate, finding, before, random, threads)
    if why is not None:
        return None, Attempt(code, why)
    return replace(candidate.remedy, verified_on=matched), None


# -- applied together -------------------------------------------------------------------

@contextlib.contextmanager
def applied(target: Target, remedies: list[Remedy]) -> Iterator[None]:
    """Every remedy of ``remedies`` that changes the model put on ``target.obj`` (a
    submodule scripted in place, a function rebound, eval mode) on entry, taken off on
    exit. ``pass-argument`` changes the inputs, not the model (:func:`inputs_for`)."""
    with contextlib.ExitStack() as stack:
        _apply_all(stack, target.obj, remedies)
        yield


def _apply_all(stack: contextlib.ExitStack, model: Any, remedies: list[Remedy]) -> None:
    for remedy in remedies:
        if remedy.kind == "eval":
            stack.enter_context(_in_eval(model))
        elif remedy.kind == "script-submodule" and remedy.module:
            stack.enter_context(_scripted_in_place(
                model, remedy.module, script_compiled(model.get_submodule(remedy.module))))
        elif remedy.kind == "script-if-tracing" and remedy.function:
            module, _, qualname = remedy.function.partition(":")
            fn = sys.modules[module]
            for part in qualname.split("."):
                fn = getattr(fn, part)
            script_compiled(fn)
            stack.enter_context(_rebound(fn, torch.jit.script_if_tracing(fn)))


def inputs_for(first: Capture, before: Verification, counterexamples: list[str]
               ) -> ExampleInputs:
    """The example inputs of a trace with every ``pass-argument`` remedy applied: the first
    trace's, with the arguments each remedy's counterexample passed (``counterexamples``:
    their ``change``, as the findings' evidence names them; ``before``: the verification
    whose variants they are)."""
    kwargs = dict(first.inputs.kwargs)
    for change in counterexamples:
        variant = next((o.variant for o in before.outcomes if o.variant.change == change),
                       None)
        if variant is not None:
            kwargs.update({k: v for k, v in variant.inputs.kwargs.items() if k not in kwargs})
    return ExampleInputs(first.inputs.args, kwargs)
