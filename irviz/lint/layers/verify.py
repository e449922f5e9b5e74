"""The ``verify`` layer: counterexamples from execution, and the evidence every finding
carries to the gate (docs/lint.md: the evidence ladder).

1. :func:`run`: the variants of the example inputs (:mod:`irviz.frontends.variants`), the
   generic ones and those aimed at the decision each finding rests on (:func:`resting`:
   the rule class says which, ``Rule.decides``), run through the first trace and the
   Python model (:mod:`irviz.frontends.verification`), which records what each such
   decision was on every run (:mod:`irviz.frontends.decisions`). Counterexamples are
   taken simplest first. A mode, argument or state counterexample proves the findings
   resting on that decision directly; for the others a second trace on it is matched
   against the first (:func:`irviz.analyses.divergence.canonical`, the order
   ``check_trace`` compares in), and the lines the two runs did not share are read too;
   the statement deciding whether the first diverging line runs
   (:func:`irviz.lint.source.statements.deciding_lines`), or the one around it whose
   decision did change on that input, is where the finding belongs. A finding there is
   confirmed; with none, the divergence is a finding of its own (IRV152). One
   counterexample makes one finding: the consequences it also proves (IRV150/151/152) and
   the other branches it changed become related locations (:func:`_one_per_cause`).
2. :func:`settle`: every finding still without evidence gets its verdict: ``certain`` for
   the rules whose findings are facts and for machine-decided branches; for a finding
   resting on a decision, ``held`` when a variant drove it the other way and the trace
   still agreed, else ``undecided`` naming the input that would decide it; for the rest
   ``held`` with the variants it held on (or because its line only validates and raises);
   ``undecided`` when nothing ran that could tell.

The gate turns the verdict into the severity (:func:`irviz.lint.gate.severity_of`).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ...analyses.divergence import canonical
from ...config import variants_for
from ...errors import InputsError
from ...frontends.inputs import ExampleInputs, parse_dynamic_dims, resolve_inputs
from ...frontends.decisions import Decision, decision_at
from ...frontends.variants import GIVEN, GIVEN_DISTANCE, Variant, aimed, variants
from ...frontends.verification import Outcome, Verification, lines_run, retrace_on, verify
from ...paths import display_path, is_installed_library_file
from ..diagnostic import Evidence
from ..proof import UNDECIDED
from ..registry import REGISTRY
from ..rules.tracing import (GlobalTensorCaptured, LenOfTensor, NumpyInTrace,
                             OutputIndependentOfInput, ResizeInTrace, ShapeSpecializedTrace,
                             TensorConstructorConstant, TensorIteration, TensorToPythonNumber,
                             TraceDivergesFromModel, TraceScriptDivergence)
from ..source.statements import (assigned_names, deciding_lines, function_span, used_names,
                                 validates_only)
from .context import (LayerContext, has_random_ops, code_at as _code_at, light,
                      forward_location as _forward_location, split_where as _split)

#: rules whose findings are a Python value the trace recorded as a constant
BAKES_VALUES = tuple(r.code for r in (TensorToPythonNumber, NumpyInTrace, TensorIteration,
                                      LenOfTensor, TensorConstructorConstant,
                                      GlobalTensorCaptured, ResizeInTrace))
#: the findings that are the consequence of a divergence (confirmed with the cause's line)
CONSEQUENCES = (ShapeSpecializedTrace.code, TraceScriptDivergence.code,
                OutputIndependentOfInput.code)
#: lines that ran in one run and not the other, read at most (a run down another path
#: can differ in thousands of lines; the deciding statement is among the first)
_LINES_READ = 200
#: differing ops without a line of their own (``aten::Int``, list constructs) skipped to
#: reach the first that has one
_UNPLACED = 50


@dataclass(frozen=True)
class Resting:
    """A finding that rests on a Python decision: which kind (what a variant must change,
    :meth:`~irviz.lint.registry.Rule.decides`), the statement, and how the recorder reads
    it (None for decisions no line shows: the mode, an argument, state)."""

    key: tuple
    kind: str
    statement: str
    decision: Decision | None
    #: the names it reads (an argument finding: the arguments it names)
    named: frozenset = frozenset()


def resting(ctx: LayerContext) -> list[Resting]:
    """The findings of ``ctx`` that rest on a decision variants can drive. A library's
    finding only the source layer names is left to :mod:`.weigh` (no variant is spent on
    it)."""
    out = []
    for key, d in ctx.findings.found.items():
        rule = REGISTRY.get(d.code) if d.code in REGISTRY else None
        if rule is None or not rule.decision:
            continue
        if tuple(d.layers) == ("ast",) and is_installed_library_file(d.path):
            continue
        statement = _statement_at(d.path, d.line)
        kind = rule.decides(statement)
        decision = decision_at(d.path, d.line) if kind not in _UNSEEN else None
        named = re.findall(r"`(\w+)`", d.message) if kind == "argument" else \
            re.findall(r"\w+", statement)
        out.append(Resting(key, kind, statement, decision, frozenset(named)))
    return out


def _statement_at(path: str, line: int) -> str:
    """The source line a finding is on, read fresh from the file (a display path such as
    ``model.py`` means another file in another run of the same process)."""
    import linecache

    real = os.path.abspath(path)
    linecache.checkcache(real)
    return re.sub(r"\s+#.*$", "", linecache.getline(real, line)).strip()


#: decisions no line of the model shows: the variant of that kind is what drives them
_UNSEEN = ("mode", "argument", "state", "machine")
#: counterexamples located by a second trace, the simplest first (each costs a trace)
_LOCATED = 3


def run(ctx: LayerContext) -> None:
    """Run the variants (generic, and aimed at the decisions findings rest on) and confirm
    (or add) a finding for each counterexample, the simplest first."""
    limit = ctx.options.verify
    if not limit:
        return
    trace, G = ctx.run.trace, ctx.run.trace_graph
    if trace.inputs is None or trace.adapter is None:
        return
    obj = ctx.target.obj
    names = trace.inputs.names(obj)
    tried = variants(trace.inputs, names, parse_dynamic_dims(ctx.options.dynamic_dims), limit)
    rests = ctx.run.resting = resting(ctx)
    tried += aimed(trace.inputs, names, _aims(rests, names), obj,
                   [r.statement for r in rests if r.kind == "size"])
    tried += _configured(ctx)
    random = has_random_ops(G)
    with ctx.workspace.stage("verify"):
        decisions = list(dict.fromkeys(r.decision for r in rests if r.decision is not None))
        result = ctx.run.verification = verify(trace, tried, random, decisions,
                                               threads=1 if light(G) else None)
        if result.note:
            ctx.run.notes.append(f"{ctx.target.spec}: {result.note}")
        located = 0
        for outcome in sorted(result.counterexamples, key=lambda o: o.variant.distance):
            if _direct(ctx, outcome, rests, result):
                continue
            if located < _LOCATED:
                located += 1
                _confirm(ctx, outcome, _diverging_lines(ctx, outcome), result, rests)
        _one_per_cause(ctx)


def _configured(ctx: LayerContext) -> list[Variant]:
    """The inputs ``variants`` in ``[tool.irviz]`` gives for this target (the input of
    another rank or shape that decides what no variant made here could), evaluated like
    ``--inputs`` in the model's module; one that does not evaluate is the user's error,
    named with the key and the file."""
    config = ctx.workspace.config
    out = []
    for expr in variants_for(config, ctx.target.spec):
        try:
            inputs = resolve_inputs(ctx.target, expr)
        except InputsError as exc:
            where = display_path(config.source) if config.source is not None else "the config"
            raise InputsError(f"`variants` in [tool.irviz] of {where}: {expr!r} for "
                              f"{ctx.target.spec}: {exc.message.replace('--inputs', 'it')}",
                              hint=exc.hint, detail=exc.detail) from None
        laid_out = _as_example(inputs, ctx.run.trace.inputs, ctx.target.obj)
        if laid_out is None:
            where = display_path(config.source) if config.source is not None else "the config"
            raise InputsError(f"`variants` in [tool.irviz] of {where}: {expr!r} does not give "
                              f"{ctx.target.spec} the arguments its example inputs give "
                              f"({', '.join(ctx.run.trace.inputs.names(ctx.target.obj))})",
                              hint="a variant is another value of the same arguments: pass "
                                   "the same ones, positionally or by name")
        out.append(Variant(laid_out, f"the configured input {expr.strip()}", GIVEN,
                           "configured input", GIVEN_DISTANCE))
    return out


def _as_example(given: ExampleInputs, example: ExampleInputs, obj) -> ExampleInputs | None:
    """``given`` laid out as ``example`` is (its positional inputs, then its keywords in
    their order), which is how the trace takes them; None when the two do not give the
    same arguments."""
    if len(given.args) == len(example.args) and list(given.kwargs) == list(example.kwargs):
        return given
    import inspect

    try:
        signature = inspect.signature(getattr(obj, "forward", obj))
        want = signature.bind(*example.args, **example.kwargs).arguments
        got = signature.bind(*given.args, **given.kwargs).arguments
    except (TypeError, ValueError):
        return None
    if set(want) != set(got):
        return None
    names = list(want)
    n = len(example.args)
    return ExampleInputs(tuple(got[k] for k in names[:n]),
                         {k: got[k] for k in example.kwargs})


def _aims(rests: list[Resting], names: list[str]) -> dict[str, set[str]]:
    """Each kind of variant the findings need, with the inputs their statements name (an
    argument finding: the arguments it names)."""
    aims: dict[str, set[str]] = {}
    inputs = set(names)
    for r in rests:
        if r.kind != "machine":
            aims.setdefault(r.kind, set()).update(
                r.named if r.kind == "argument" else r.named & inputs)
    return aims


def _direct(ctx: LayerContext, outcome: Outcome, rests: list[Resting],
            result: Verification) -> bool:
    """A counterexample of a mode, argument or state variant proves the findings resting
    on that very decision, with no second trace to locate it."""
    kind = outcome.variant.kind
    if kind not in ("mode", "argument", "state"):
        return False
    keys = [r.key for r in rests if r.kind == kind and r.key in ctx.findings.found]
    evidence = _evidence(outcome, result)
    for key in keys:
        if not _proven(ctx.findings.found[key]):
            ctx.findings.attach(key, evidence)
    return bool(keys)


def _one_per_cause(ctx: LayerContext) -> None:
    """One root cause, one finding: a divergence finding (IRV150/151/152) proven by the
    same counterexample as a finding of its cause is folded into that one, as a related
    location (the user fixes the loop, not the shape it baked)."""
    found = ctx.findings.found
    causes: dict[str, list[tuple]] = {}
    for key, d in found.items():
        if key[0] not in CONSEQUENCES + (TraceDivergesFromModel.code,) and _proven(d):
            causes.setdefault(d.evidence.summary, []).append(key)
    for key, d in list(found.items()):
        if key[0] not in CONSEQUENCES + (TraceDivergesFromModel.code,) or not _proven(d):
            continue
        same = causes.get(d.evidence.summary)
        if not same:
            continue
        # the cause on the consequence's own line, else the first
        cause = next((c for c in same if c[1:] == key[1:]), same[0])
        del found[key]
        if cause[1:] != key[1:]:  # (on the cause's own line it says nothing more)
            found[cause] = found[cause].with_related(
                (d.path, d.line, f"{d.code} {d.name}: the same counterexample"))


def _diverging_lines(ctx: LayerContext, outcome: Outcome) -> list[tuple[str, int]]:
    """Where a second trace on the counterexample leaves the first: the lines of the first
    op the two graphs differ at (both sides), then the lines one run executed and the other
    did not, in file order. Empty when it cannot be traced."""
    second = retrace_on(ctx.run.trace, outcome.variant.inputs)
    found: list[tuple[str, int]] = []
    first_lines = ctx.run.trace.executed_lines or frozenset()
    model_files = _model_files(ctx.run.trace_graph)
    if second is None:  # the paths the Python model took on both still tell (a trace's
        # run takes its own `torch.jit.is_tracing()` branches: compare like with like)
        trace = ctx.run.trace
        first_lines = lines_run(trace, trace.inputs)
        second_lines = lines_run(trace, outcome.variant.inputs)
        return _in_files(first_lines ^ second_lines, model_files)
    G2 = ctx.workspace.graph(second, needs=())
    a, b = _exact(ctx.run.trace_graph), _exact(G2)
    diverged = 0
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x is not None and y is not None and x[:3] == y[:3]:
            continue
        # one op more on one side: that op diverges, not its neighbour on the other
        if x is not None and i + 1 < len(b) and x[:3] == b[i + 1][:3]:
            x = None
        elif y is not None and i + 1 < len(a) and y[:3] == a[i + 1][:3]:
            y = None
        for entry in (x, y):
            where = _split(entry[1]) if entry is not None else None
            if where is not None:
                found.append(where[:2])
        diverged += 1
        if found or diverged > _UNPLACED:  # the first differing op with a line
            break
    second_lines = second.executed_lines or frozenset()
    model_files |= _model_files(G2)
    found.extend(_in_files(first_lines ^ second_lines, model_files))
    return list(dict.fromkeys(found))


def _model_files(G) -> set[str]:
    """The files the trace recorded ops from: the model's code (lines recorded elsewhere
    ran beside it: a garbage-collector callback, a logging hook)."""
    return {_split(d["user_source"])[0] for _, d in G.nodes(data=True) if d.get("user_source")}


def _in_files(lines, files: set[str]) -> list[tuple[str, int]]:
    real = {os.path.realpath(f) for f in files}
    return sorted(line for line in lines if os.path.realpath(line[0]) in real)[:_LINES_READ]


def _exact(G) -> list[tuple]:
    """:func:`~irviz.analyses.divergence.canonical` with float constants kept: a value
    the trace baked (``x.max().item()``) differs only there."""
    out = []
    for kind, source, _consts, node in canonical(G):
        data = G.nodes[node]
        consts = tuple(_const(G.nodes[p[0]]) for p in data["inputs"]
                       if len(p) == 1 and p[0] in G and G.nodes[p[0]].get("hidden"))
        out.append((kind, source, consts, node))
    return out


def _const(data: dict) -> tuple:
    """A folded input as compared: its label, and a tensor constant's shape and dtype."""
    out = data["outputs"][0] if data.get("outputs") else {}
    return data["label"], tuple(out.get("shape") or ()), out.get("dtype")


def _candidates(lines: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Every line a finding for this divergence may sit on: the statements deciding
    whether each diverging line runs (innermost first), then the diverging line itself."""
    out = []
    for path, line in lines:
        out.extend((path, n) for n in deciding_lines(path, line))
        out.append((path, line))
    return list(dict.fromkeys((display_path(p), n) for p, n in out))


def _decisions(lines: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Where each diverging line was decided: the innermost statement deciding whether it
    runs, else the line itself (an op whose constants differ)."""
    out = []
    for path, line in lines:
        deciders = deciding_lines(path, line)
        out.append((display_path(path), deciders[0] if deciders else line))
    return list(dict.fromkeys(out))


def _evidence(outcome: Outcome, result: Verification) -> Evidence:
    summary = outcome.summary()
    if result.compared != "values":  # said where it is read: random ops were in the trace
        summary += f" (compared: {result.compared})"
    return Evidence("counterexample", summary, variant=outcome.variant.change,
                    output=outcome.output, difference=outcome.difference,
                    compared=result.compared)


def _changed(rests: list[Resting], result: Verification, outcome: Outcome) -> set[tuple]:
    """The findings whose decision went another way on ``outcome`` than on the example."""
    out = set()
    for r in rests:
        d = r.decision
        if d is None:
            continue
        where = (d.path, d.line)
        if d.summary(outcome.taken.get(where, ())) != \
                d.summary(result.example_taken.get(where, ())):
            out.add(r.key)
    return out


def _confirm(ctx: LayerContext, outcome: Outcome, lines: list[tuple[str, int]],
             result: Verification, rests: list[Resting] = ()) -> None:
    """Put the counterexample on the findings where the two runs decided differently (and
    on the divergence findings at the lines around them), else on the baked values the
    first diverging line reads, else report IRV152 where the first divergence was decided.
    Findings another counterexample proved keep theirs."""
    evidence = _evidence(outcome, result)
    found = ctx.findings.found
    by_line: dict[tuple[str, int], list[tuple]] = {}
    for key in found:
        by_line.setdefault((key[1], key[2]), []).append(key)
    decisions = _decisions(lines)
    candidates = _candidates(lines)
    hit = [key for place in decisions for key in by_line.get(place, ())]
    changed = _changed(rests, result, outcome)
    watched = {r.key for r in rests if r.decision is not None}
    deciders = [key for place in candidates for key in by_line.get(place, ())
                if key in changed]
    if deciders and not any(k in changed for k in hit):
        # the statement the divergence sits in did not change its mind on this input
        # (``if crop and ...`` with ``crop`` off): the one around it that did decided
        hit = [k for k in deciders if k in watched]
    if hit:
        if all(k[0] in CONSEQUENCES for k in hit):  # and their cause, when it shows
            hit += _baked_values_used(ctx, decisions)
        hit += [key for place in candidates for key in by_line.get(place, ())
                if key[0] in CONSEQUENCES]
        hit = list(dict.fromkeys(hit))
        causes = [k for k in hit if k[0] not in CONSEQUENCES]
        first = next((k for k in causes if k in changed), causes[0] if causes else hit[0])
        for key in hit:
            if _proven(found[key]) or (key in watched and key not in changed
                                       and key[1:] != first[1:]):
                continue  # its decision did not change on this input: not its proof
            if key[0] in CONSEQUENCES or key[1:] == first[1:]:
                ctx.findings.attach(key, evidence)
            elif not _proven(found[first]) or found[first].evidence is evidence:
                # one counterexample, one finding: where the runs first part ways; the
                # other decisions it changed are named there
                found[first] = found[first].with_related(
                    (key[1], key[2], f"{key[0]} {found[key].name}: decided differently on "
                                     "the same counterexample"))
                del found[key]
        return
    baked = _baked_values_used(ctx, candidates) if candidates else _warned_bakes(ctx)
    if baked:  # (those another counterexample proved already explain it too)
        for key in baked:
            if not _proven(found[key]):
                ctx.findings.attach(key, evidence)
        return
    place = decisions[0] if decisions else _forward_location(ctx.target)
    if place is None:
        return
    expr = _code_at(place).strip() or "forward"
    ctx.findings.report(TraceDivergesFromModel, place, "verify", expr=expr)
    key = (TraceDivergesFromModel.code, display_path(place[0]), int(place[1]))
    if not _proven(found[key]):
        ctx.findings.attach(key, evidence)


def _baked_values_used(ctx: LayerContext, candidates: list[tuple[str, int]]) -> list[tuple]:
    """Findings of a value the trace baked (a size or a tensor turned into a Python
    number, a NumPy result, a tensor built from Python data) whose name the first
    diverging line reads, in the same function and before it: the constant that differs
    there came from them."""
    found = ctx.findings.found
    for path, line in candidates:
        span = function_span(path, line)
        if span is None:
            continue
        used = used_names(path, line)
        keys = [key for key in found
                if key[0] in BAKES_VALUES and key[1] == path and span[0] <= key[2] < line
                and assigned_names(path, key[2]) & used]
        if keys:
            return keys
    return []


def _warned_bakes(ctx: LayerContext) -> list[tuple]:
    """When the two traces differ in no op nor constant (a tensor constant's data): the
    findings of baked values torch warned about while tracing."""
    found = ctx.findings.found
    return [key for key, d in found.items() if key[0] in BAKES_VALUES and "trace" in d.layers]


def _proven(d) -> bool:
    return d.evidence is not None and d.evidence.verdict == "counterexample"


# -- every other finding ---------------------------------------------------------------

_VALIDATES = ("a validation that raises: the trace drops the check, and every input that "
              "passes it takes the traced path")


def settle(ctx: LayerContext) -> None:
    """The verdict of every finding that has none yet (see the module docstring)."""
    result: Verification | None = ctx.run.verification
    nothing_ran = _why_nothing_ran(ctx, result)
    held_on = result.held_on() if result is not None else ()
    rests = {r.key: r for r in (getattr(ctx.run, "resting", None) or ())}
    for key, d in list(ctx.findings.found.items()):
        if d.evidence is not None:
            continue
        rule = REGISTRY.get(d.code) if d.code in REGISTRY else None
        rest = rests.get(key)
        kind = rest.kind if rest is not None else (
            rule.decides(_statement_at(d.path, d.line)) if rule is not None
            and rule.decision else "")
        if rule is not None and rule.proof == "certain":
            ctx.findings.attach(key, Evidence("certain", rule.certainty or rule.name,
                                              reason=rule.certainty or None))
        elif kind == "machine":
            text = _MACHINE.format("out" if _has_cuda() else "")
            ctx.findings.attach(key, Evidence("certain", text, reason=text))
        elif validates_only(d.path, d.line):
            ctx.findings.attach(key, Evidence("held", _VALIDATES, held_on=held_on,
                                              reason=_VALIDATES))
        elif nothing_ran is not None:
            ctx.findings.attach(key, Evidence("undecided", nothing_ran, reason=nothing_ran))
        elif rest is not None:
            evidence = _coverage(ctx, rest, result, held_on)
            if evidence.verdict != "undecided" or not _fold(ctx, rest, result):
                ctx.findings.attach(key, evidence)
        else:
            ctx.findings.attach(key, Evidence("held", ", ".join(held_on), held_on=held_on))
    _one_per_cause(ctx)


_MACHINE = ("the machine decides this branch, and the trace keeps the side this one took "
            "(a machine with{} CUDA takes the other)")


def _fold(ctx: LayerContext, rest: Resting, result: Verification) -> bool:
    """A decision no passing variant drove, which a counterexample did change. A value
    the trace baked (a size turned into a number) that changed where the trace broke gets
    that counterexample; a branch is part of the finding the counterexample proves (one
    input, one finding) and named there, or gets it when only the divergence's
    consequences (IRV150/151/152) hold it."""
    found = ctx.findings.found
    for outcome in sorted(result.counterexamples, key=lambda o: o.variant.distance):
        if rest.key not in _changed([rest], result, outcome):
            continue
        evidence = _evidence(outcome, result)
        holders = [k for k, d in found.items() if k != rest.key and _proven(d)
                   and d.evidence.summary == evidence.summary]
        causes = [k for k in holders if k[0] not in CONSEQUENCES + (TraceDivergesFromModel.code,)]
        if not holders:
            continue
        if rest.decision is None or rest.decision.kind == "value" or not causes:
            ctx.findings.attach(rest.key, evidence)
            return True
        proven = causes[0]
        d = found.pop(rest.key)
        for key in [k for k in found if k[0] in CONSEQUENCES and k[1:] == rest.key[1:]
                    and not _proven(found[k])]:
            del found[key]  # what the trace froze there, a consequence of this decision
        found[proven] = found[proven].with_related(
            (d.path, d.line, f"{d.code} {d.name}: decided differently on the same "
                             "counterexample"))
        return True
    return False


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _coverage(ctx: LayerContext, rest: Resting, result: Verification,
              held_on: tuple[str, ...]) -> Evidence:
    """Held when some valid variant drove the decision another way (and every output
    matched, or it would have its counterexample); undecided when none did."""
    valid = [o for o in result.valid if not o.counterexample]
    if rest.kind in ("mode", "argument", "state"):
        if rest.kind == "mode" and not getattr(ctx.target.obj, "training", True):
            return Evidence("held", _EVAL_TRACE, held_on=held_on, reason=_EVAL_TRACE)
        drove = [o for o in valid if o.variant.kind == rest.kind]
        if drove:
            text = f"{drove[0].variant.change}: every output matched"
            return Evidence("held", text, held_on=held_on, reason=text)
        text = f"no variant changed it: {UNDECIDED[rest.kind]}" + _rejected(result, rest)
        return Evidence("undecided", text, held_on=held_on, reason=text)
    d = rest.decision
    where = (d.path, d.line) if d is not None else None
    first = d.summary(result.example_taken.get(where, ())) if d is not None else None
    drove = [o for o in valid if d is not None and d.summary(o.taken.get(where, ())) != first]
    what = _what(d)
    if drove:
        if d.kind == "if":
            text = f"the {what} took both sides on {len(valid)} variants"
        else:
            seen = ", ".join(dict.fromkeys(d.describe(o.taken.get(where, ())) for o in drove))
            text = (f"the {what} was {d.describe(result.example_taken.get(where, ()))} on "
                    f"the example, {seen} on {len(drove)} of {len(valid)} variants")
        return Evidence("held", text, held_on=held_on, reason=text)
    if d is not None and d.kind == "if":
        same = f"the {what} took the same side on every variant"
    elif d is not None and d.kind in ("for", "while"):
        same = (f"the {what} ran {d.describe(result.example_taken.get(where, ()))} on the "
                f"example and on every variant")
    else:
        same = f"the {what} was the same on every variant"
    text = f"{same}: {UNDECIDED.get(rest.kind, UNDECIDED['value'])}" + _rejected(result, rest)
    return Evidence("undecided", text, held_on=held_on, reason=text)


def _rejected(result: Verification, rest: Resting) -> str:
    """The variants aimed at this kind of decision that the model's own Python raised on:
    not valid inputs, so they prove nothing (said, so the user knows they were tried)."""
    rejected = [o for o in result.outcomes if not o.valid and o.variant.kind == rest.kind]
    if not rejected:
        return ""
    first = rejected[0]
    return (f" ({len(rejected)} aimed variant(s) the model's Python rejected prove nothing: "
            f"{first.variant.short}: {first.error})")


def _what(d: Decision | None) -> str:
    if d is None or d.kind == "value":
        return "value"
    return {"if": "if", "while": "while loop", "for": "loop"}[d.kind]


_EVAL_TRACE = ("traced in eval mode: the trace keeps the branch an eval-mode deployment "
               "takes")


def _why_nothing_ran(ctx: LayerContext, result: Verification | None) -> str | None:
    """Why nothing could tell (None when some valid variant ran)."""
    if result is not None and result.valid:
        return None
    if ctx.options.no_exec:
        return "--no-exec: the model did not run"
    if ctx.run.trace is None:
        if ctx.options.mode == "script":
            return "--mode script: no trace to check against the model"
        return "no trace ran (no example inputs, or the trace failed)"
    if not ctx.options.verify:
        return "verification is off (--verify 0)"
    if result is None:
        return "the trace's inputs could not be varied"
    if result.note and not result.outcomes:
        return result.note
    return ("no variant of the example inputs ran the Python model: give --dynamic-dims, or "
            "inputs that allow other sizes")
