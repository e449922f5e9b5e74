"""``irviz trace``: the TorchScript archive to deploy, traced with irviz's verified remedies
applied and checked the way ``irviz migrate`` checks its program.

The tutorial's move, when tracing would freeze control flow, is to script the small piece
that holds it and trace the rest. ``irviz lint`` proves a trace wrong with a
counterexample and finds the remedy that verifies (:mod:`irviz.frontends.remedies`); this
command applies every one of them together and checks the result. For one model, in order:

* **runs**: the Python model runs on the example inputs;
* **remedies**: every error finding (one lint run, through the ``[tool.irviz]`` gate) has
  a verified remedy; each one without is listed with the candidates that failed and why;
* **traces**: the model traced with the remedies applied (a submodule scripted in place,
  a function made ``@torch.jit.script_if_tracing``, eval mode, the argument passed), or
  scripted whole when that is the remedy;
* **same outputs**: the archive matches the Python model on the example and on every
  valid variant of the lint's verification (the variants of the new example inputs when
  an argument was passed);
* **saved**: written atomically, loaded back with ``torch.jit.load`` and checked again
  on the same inputs. The archive is written only when every check before passed, and
  taken away again when it does not load back: a failed run leaves no file.

The archive's picture goes beside it (``OUT.svg``): the scripted parts keep their ``if``
and loops. Exit 0 when every check passed, 1 when one failed, 2 on a user error.
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import InputsError, UsageError
from ..exits import fail
from ..workspace import Workspace
from .checklist import (Check, check_format, describe, markdown_table, one_line, one_target,
                        output_file, passed, print_checklist, rows, text_row)
from .common import Console, model_output_to_stderr, start

TRACED, NOT_TRACED = 0, 1
#: the checklist, in order
ORDER = ("runs", "remedies", "traces", "same outputs", "saved")
#: what a TorchScript archive is saved as
SUFFIXES = (".pt", ".pth")


@dataclass(frozen=True)
class TraceRequest:
    target: str
    output: str | None = None
    fmt: str = "text"
    picture: bool = True
    engine: str = "auto"
    quiet: bool = False
    debug: bool = False


@dataclass
class TraceResult:
    """The checked archive of one model: the checklist, the remedies applied, the error
    findings no remedy fixes, and the verified ScriptModule (``module``: the archive as
    loaded back; None when a check before saving failed)."""

    target: str
    checks: list[Check] = field(default_factory=list)
    #: the verified remedies applied together (one per fix, in the findings' order)
    remedies: list = field(default_factory=list)
    #: every finding that came through the gate (Diagnostics, their remedy on each)
    findings: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    module: Any = field(default=None, repr=False)

    @property
    def blocking(self) -> list:
        """The error findings no verified remedy fixes: they fail the checklist."""
        return [d for d in self.findings if d.severity == "error" and d.remedy is None]

    @property
    def ok(self) -> bool:
        return passed(self.checks)

    def to_dict(self) -> dict:
        return {"target": self.target, "ok": self.ok,
                "checks": [c.to_dict() for c in rows(self.checks, ORDER)],
                "remedies": [r.to_dict() for r in self.remedies],
                "blocking": [d.to_dict() for d in self.blocking],
                "findings": [d.to_dict() for d in self.findings],
                "notes": self.notes, "written": self.written}

    def __repr__(self) -> str:
        done = "traced" if self.ok else "not traced"
        return f"<TraceResult {self.target}: {done}, {len(self.remedies)} remedies>"


def _count(n: int, word: str) -> str:
    """``1 error finding``, ``2 verified remedies``."""
    if n == 1:
        return f"1 {word}"
    return f"{n} {word[:-1] + 'ies' if word.endswith('y') else word + 's'}"


def _unique(remedies) -> list:
    """One of each remedy (two findings fixed by one scripted submodule apply it once)."""
    return list({r.code: r for r in remedies}.values())


def _whole(remedies) -> bool:
    return any(r.kind == "script-submodule" and not r.module for r in remedies)


def _what(remedies, blocked: bool = False) -> str:
    """``torch.jit.trace with dg scripted in place`` for the traces check."""
    if _whole(remedies):
        return "torch.jit.script(model): the whole model scripted, nothing traced"
    parts = [f"{r.module} scripted in place" for r in remedies if r.kind == "script-submodule"]
    parts += [f"{r.function.rpartition(':')[2]} made @torch.jit.script_if_tracing"
              for r in remedies if r.kind == "script-if-tracing"]
    parts += ["the model in eval mode" for r in remedies if r.kind == "eval"]
    parts += [f"{', '.join(r.arguments)} passed" for r in remedies
              if r.kind == "pass-argument"]
    if not parts:
        return "torch.jit.trace" + (", no verified remedy to apply" if blocked else
                                    ", no remedy needed")
    return "torch.jit.trace with " + ", ".join(parts)


class _Tracer:
    """One model traced, remedied and checked; ``path`` None saves nothing (the API's
    default) but still loads the archive back from memory."""

    def __init__(self, ws: Workspace, target, path: Path | None, console: Console):
        self.ws, self.target, self.path, self.console = ws, target, path, console
        #: how the archive is called: a trace takes every input positionally, the model
        #: scripted whole as the Python model is
        self._archive_inputs = None

    def run(self) -> TraceResult:
        import torch

        from ..frontends.records import COMPILED_KINDS
        from ..frontends.verification import Preserved

        target = self.target
        if target.kind in COMPILED_KINDS or target.kind == "exported":
            raise UsageError(f"{target.spec} is already compiled ({target.kind}): there is "
                             "no Python to trace", hint="give the Python model "
                                                        "(FILE.py:NAME) it was made from")
        inputs = self.ws.inputs_for(target)
        if inputs is None:
            raise InputsError(f"tracing {target.spec} runs it, so it needs example inputs",
                              hint='pass them with --inputs "torch.rand(3, 4)" (or define '
                                   "`example_inputs` in the model file)")
        t = TraceResult(target.spec)
        # 1. runs
        try:
            with torch.no_grad(), Preserved(target.obj):
                inputs.call(target.obj)
        except Exception as exc:  # noqa: BLE001 - the model's own error, said as a check
            t.checks.append(Check("runs", False, f"the Python model raised {one_line(exc)} "
                                                 f"on {describe(inputs)}"))
            return t
        t.checks.append(Check("runs", True, f"the Python model ran on {describe(inputs)}"))
        # 2. remedies: one lint run's findings, through the gate
        self.console.say(f"linting {target.spec} (the counterexamples and their remedies)")
        run = self._lint(t)
        t.remedies = _unique(d.remedy for d in t.findings if d.remedy is not None)
        t.checks.append(self._remedies_check(t))
        if run.trace is None:
            t.checks.append(Check("traces", False, self._trace_error()))
            return t
        # 3. traces, with every remedy applied
        try:
            fixed, tried = self._remedied(run, t)
        except Exception as exc:  # noqa: BLE001 - torch's refusal, in its words
            t.checks.append(Check("traces", False, f"{_what(t.remedies)} failed: "
                                                   f"{one_line(exc)}"))
            return t
        t.checks.append(Check("traces", True, _what(t.remedies, bool(t.blocking))))
        t.notes += [n for n in fixed.notes if n not in t.notes]   # how the archive is called
        # 4. same outputs
        random = self._random(run)
        t.checks.append(self._compared("same outputs", fixed, tried, t, random))
        # 5. saved (only an archive every check passed is written)
        if not t.ok:
            t.checks.append(Check("saved", None, "not written: a check above failed"))
            return t
        t.checks.append(self._save(fixed, tried, t, random))
        return t

    # -- lint -----------------------------------------------------------------------------

    def _lint(self, t: TraceResult):
        from ..lint.gate import Gate
        from ..lint.session import LintSession

        run = LintSession(self.ws).target(self.target)
        t.findings = Gate.from_config(self.ws.config).apply(run.found).kept
        t.notes += run.notes
        return run

    def _remedies_check(self, t: TraceResult) -> Check:
        errors = [d for d in t.findings if d.severity == "error"]
        if not errors:
            warned = sum(1 for d in t.findings if d.severity == "warning")
            return Check("remedies", True, "none needed: no error finding" + (
                f" ({_count(warned, 'warning')}: `irviz lint` shows them)" if warned else ""))
        blocking = t.blocking
        if blocking:
            has = "has" if len(blocking) == 1 else "have"
            return Check("remedies", False, f"{len(blocking)} of "
                                            f"{_count(len(errors), 'error finding')} {has} no "
                                            "verified remedy")
        fix = "fixes" if len(t.remedies) == 1 else "fix"
        return Check("remedies", True, f"{_count(len(t.remedies), 'verified remedy')} {fix} "
                                       f"the {_count(len(errors), 'error finding')}")

    def _trace_error(self) -> str:
        found = self.ws.captured(self.target, "trace")
        return f"torch.jit.trace failed: {found.message if found is not None else 'no trace'}"

    @staticmethod
    def _random(run) -> bool:
        from ..lint.layers.context import has_random_ops

        return run.trace_graph is not None and has_random_ops(run.trace_graph)

    # -- trace --------------------------------------------------------------------------

    def _remedied(self, run, t: TraceResult):
        """The model traced (or scripted whole) with every remedy applied, and the
        variants it is checked on."""
        from ..frontends import remedies
        from ..frontends.inputs import ExampleInputs

        first, before = run.trace, run.verification
        passing = [d.evidence.variant for d in t.findings
                   if d.remedy is not None and d.remedy.kind == "pass-argument"]
        inputs = first.inputs
        if passing and before is not None and not _whole(t.remedies):
            inputs = remedies.inputs_for(first, before, passing)
        fixed = remedies.retraced(first, remedies.applied(self.target, t.remedies), inputs,
                                  whole=_whole(t.remedies))
        self._archive_inputs = inputs if _whole(t.remedies) else ExampleInputs(inputs.flat)
        evaluated = any(r.kind == "eval" for r in t.remedies)
        tried = remedies.checked_on(first, before, inputs, evaluated) \
            if before is not None or inputs is not first.inputs else []
        return fixed, tried

    def _compared(self, name: str, fixed, tried, t: TraceResult, random: bool) -> Check:
        """``fixed`` against the Python model (in eval mode when that is a remedy) on the
        example and ``tried``."""
        from ..frontends import remedies
        from ..frontends.verification import verify

        eval_only = [r for r in t.remedies if r.kind == "eval"]
        with remedies.applied(self.target, eval_only):
            after = verify(fixed, tried, random)
        if after.note:
            return Check(name, False, after.note)
        bad = after.counterexamples
        total = 1 + len([o for o in after.valid if o.variant.kind != "state"])
        if bad:
            return Check(name, False, f"differs from the Python model on {len(bad)} of "
                                      f"{total} inputs: "
                         + "; ".join(o.summary() for o in bad[:3]))
        return Check(name, True, f"the example and {_count(total - 1, 'variant input')} "
                                 f"match the Python model ({after.compared} compared)")

    # -- save ---------------------------------------------------------------------------

    def _save(self, fixed, tried, t: TraceResult, random: bool) -> Check:
        """Written atomically, loaded back with torch.jit.load and checked again on the
        same inputs; taken away when it does not load back or differs."""
        import torch

        from ..files import write_atomic

        buffer = io.BytesIO()
        try:
            torch.jit.save(fixed.scripted, buffer)
        except Exception as exc:  # noqa: BLE001 - torch's refusal, in its words
            return Check("saved", False, f"torch.jit.save failed: {one_line(exc)}")
        data = buffer.getvalue()
        where = f"serialized in memory ({len(data) // 1024} KB; no output file given)"
        if self.path is not None:
            write_atomic(self.path, data)
            where = f"{self.path} ({len(data) // 1024} KB)"
        try:
            loaded = torch.jit.load(str(self.path) if self.path else io.BytesIO(data))
        except Exception as exc:  # noqa: BLE001
            self._remove()
            return Check("saved", False, f"written but does not load back: {one_line(exc)}; "
                                         "removed")
        again = self._compared("saved", replace(fixed, compiled=loaded, _make_compiled=None,
                                                trace_graph=None), tried, t, random)
        if not again.ok:
            self._remove()
            return Check("saved", False, f"loaded back, it {again.detail}; removed")
        if self.path is not None:
            t.written.append(str(self.path))
        t.module = loaded
        return Check("saved", True, f"{where}, loaded back with torch.jit.load: the same "
                                    "inputs match again")

    def _remove(self) -> None:
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def picture(self, t: TraceResult, engine: str) -> None:
        """The archive as written, loaded through a workspace like any ``.pt``, drawn
        beside it (``OUT.svg``): the scripted parts show their ``if`` and loops."""
        from ..files import write_atomic

        pictured = Workspace(inputs=self._archive_inputs, config=self.ws.config)
        archive = pictured.targets(str(self.path))[0]
        svg = self.path.with_suffix(".svg")
        write_atomic(svg, pictured.view(archive, "script").svg(engine))
        t.written.append(str(svg))


def trace_model(ws: Workspace, model: object, output: object = None, *,
                picture: bool = False, engine: str = "auto",
                console: Console | None = None) -> TraceResult:
    """The one model ``model`` names (a spec or a model object) traced with its verified
    remedies and checked; the archive written to ``output`` (``""``: ``NAME.pt`` here, the
    CLI's default; a folder: ``NAME.pt`` in it; None: kept in memory) and,
    with ``picture``, drawn beside it. Loaded and linted under the seed ``irviz lint``
    uses: random weights and inputs are the numbers lint saw."""
    from ..lint.runner import seeded

    with seeded():
        target = one_target(ws, model, "trace")
        path = None if output is None else output_file(output, target.name, SUFFIXES,
                                                       "TorchScript archives")
        tracer = _Tracer(ws, target, path, console or Console(True))
        result = tracer.run()
        if picture and path is not None and str(path) in result.written:
            tracer.picture(result, engine)
    return result


# -- formats ------------------------------------------------------------------------------

def _finding(d) -> str:
    return f"{d.path}:{d.line} {d.code} {d.message}"


def to_text(t: TraceResult) -> str:
    lines = [f"irviz trace {t.target}"]
    for check in rows(t.checks, ORDER):
        lines.append(text_row(check))
        if check.name != "remedies":
            continue
        for d in t.findings:
            if d.remedy is not None:
                lines.append(f"      {_finding(d)}")
                lines.append(f"        {d.remedy.line()}")
        for d in t.blocking:
            lines.append(f"      {_finding(d)}")
            lines.append("        no verified remedy" + (":" if d.remedy_tried else
                                                         f": {_no_search(d)}"))
            lines += [f"        tried {a.line()}" for a in d.remedy_tried]
    lines += [f"  note: {n}" for n in t.notes]
    lines += [f"  wrote {w}" for w in t.written]
    lines.append("traced: every check passed" if t.ok else "not traced")
    return "\n".join(lines) + "\n"


def _no_search(d) -> str:
    """Why a finding has no remedy and no candidate tried."""
    verdict = d.evidence.verdict if d.evidence is not None else None
    if verdict == "counterexample":
        return "no candidate"
    return (f"irviz searches remedies for findings a counterexample proves; this one is "
            f"{verdict or 'unverified'}")


def to_markdown(t: TraceResult) -> str:
    lines = [f"## Trace of `{t.target}`", ""] + markdown_table(rows(t.checks, ORDER))
    if t.remedies:
        lines += ["", "### Remedies applied", "", "| finding | remedy | verified on |",
                  "|---|---|---|"]
        lines += [f"| `{d.path}:{d.line}` {d.code} | `{d.remedy.code}` | "
                  f"{d.remedy.verified_on} inputs |" for d in t.findings if d.remedy]
    if t.blocking:
        lines += ["", "### No verified remedy", ""]
        for d in t.blocking:
            lines.append(f"- `{d.path}:{d.line}` {d.code} {d.message}"
                         + ("" if d.remedy_tried else f": {_no_search(d)}"))
            lines += [f"  - tried `{a.code}`: {a.why}" for a in d.remedy_tried]
    lines += [""] + [f"- note: {n}" for n in t.notes] + [f"- wrote `{w}`" for w in t.written]
    lines += ["", "**traced**" if t.ok else "**not traced**"]
    return "\n".join(lines) + "\n"


def run(request: TraceRequest, workspace: Workspace) -> int:
    console = Console(request.quiet)
    try:
        start()
        check_format(request.fmt)
        with model_output_to_stderr():
            result = trace_model(workspace, request.target, request.output or "",
                                 picture=request.picture, engine=request.engine,
                                 console=console)
    except Exception as exc:  # noqa: BLE001 - every error is reported, never a traceback
        return fail(exc, request.debug)
    print_checklist(result, request.fmt, to_text, to_markdown)
    return TRACED if result.ok else NOT_TRACED
