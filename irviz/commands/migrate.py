"""``irviz migrate``: from TorchScript (an archive, or a model file) to ``torch.export``,
checked the way pytorch's migration checklist asks.

For one model it answers, in order: does it **run** (the compiled model, or the Python one,
on the example inputs); does it **convert** (``TS2EPConverter`` for compiled code,
``torch.export`` for Python; when not, each blocking node at the user's line with the
rewrite the IRV5xx rules suggest); are the **outputs the same** (the converted program
against the original on the example inputs and on variant inputs: other sizes, other
values, so both branches of a ``torch.cond`` run; the largest difference per output); is
it **saved** (the ``.pt2`` written atomically and loaded back, its outputs checked again).
Pictures of the converted program and of the original are written beside the ``.pt2``.
Exit 0 when it converted and every output matched, 1 when it did not, 2 on a user error.
"""
from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputsError
from ..exits import fail
from ..workspace import Workspace
from .checklist import MARK as _MARK
from .checklist import (Check, check_format, markdown_table, one_target, output_file, passed,
                        print_checklist, text_row)
from .checklist import rows as in_order
from .checklist import describe as _describe
from .checklist import one_line as _one_line
from .checklist import tensors as _leaves
from .common import Console, model_output_to_stderr, start

MIGRATED, NOT_MIGRATED = 0, 1
#: outputs within this of each other are the same (float32 kernels differ in the last bits
#: between TorchScript and the exported program's decompositions)
RTOL, ATOL = 1e-4, 1e-5
#: variant inputs tried besides the example (other sizes, other values, masks)
MAX_VARIANTS = 12


@dataclass(frozen=True)
class MigrateRequest:
    target: str
    output: str | None = None
    fmt: str = "text"
    inline_forks: bool = False
    pictures: bool = True
    engine: str = "auto"
    quiet: bool = False
    debug: bool = False


@dataclass
class Comparison:
    """The converted program against the original on one input."""

    inputs: str
    #: the largest absolute difference per output (None: that output did not compare)
    max_diff: list[float | None] = field(default_factory=list)
    same: bool = False
    error: str | None = None

    def to_dict(self) -> dict:
        return {"inputs": self.inputs, "max_diff": self.max_diff, "same": self.same,
                "error": self.error}


@dataclass
class Branches:
    """One ``if`` on tensor data of the original (a ``torch.cond`` once converted): on how
    many of the matching inputs each side ran."""

    location: str | None
    then: int = 0
    orelse: int = 0

    @property
    def where(self) -> str:
        return f"the if at {self.location}" if self.location else "an if (no line)"

    def summary(self) -> str:
        if self.then and self.orelse:
            return (f"{self.where}: both branches compared (then on {self.then}, else on "
                    f"{self.orelse} input(s))")
        ran, missed = ("then", "else") if self.then else ("else", "then")
        if not (self.then or self.orelse):
            return f"{self.where}: ran on none of the compared inputs"
        return (f"{self.where}: only the {ran}-branch ran; the {missed}-branch's outputs "
                "were not compared (give --inputs that take it)")

    def to_dict(self) -> dict:
        return {"location": self.location, "then": self.then, "else": self.orelse}


@dataclass
class Migration:
    target: str
    method: str = ""
    checks: list[Check] = field(default_factory=list)
    blockers: list = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    #: each if on tensor data of a compiled original, with the sides the inputs took
    branches: list[Branches] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    #: the exported program when it converted (not serialized: the .pt2 is)
    program: Any = field(default=None, repr=False)
    #: the target the program's picture is drawn as (the Sphinx directive draws it too)
    program_target: Any = field(default=None, repr=False)

    @property
    def migrated(self) -> bool:
        return passed(self.checks)

    def to_dict(self) -> dict:
        return {"target": self.target, "method": self.method, "migrated": self.migrated,
                "checks": [c.to_dict() for c in self.checks],
                "blockers": [b.to_dict() for b in self.blockers],
                "comparisons": [c.to_dict() for c in self.comparisons],
                "branches": [b.to_dict() for b in self.branches],
                "notes": self.notes, "written": self.written}


# -- the checks -------------------------------------------------------------------------
def _compare(label: str, original: Any, converted: Any) -> Comparison:
    import torch

    a, b = _leaves(original), _leaves(converted)
    result = Comparison(label)
    if len(a) != len(b):
        result.error = f"{len(a)} output tensor(s) against {len(b)}"
        return result
    same = True
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            result.max_diff.append(None)
            same = False
            continue
        diff = (x.double() - y.double()).abs().max().item() if x.numel() else 0.0
        result.max_diff.append(diff)
        same = same and torch.allclose(x.double(), y.double(), rtol=RTOL, atol=ATOL,
                                       equal_nan=True)
    result.same = same
    return result


class _Migrator:
    def __init__(self, request: MigrateRequest, ws: Workspace, console: Console):
        self.request, self.ws, self.console = request, ws, console

    def target(self):
        return one_target(self.ws, self.request.target, "migrate")

    def output_path(self, target) -> Path:
        return output_file(self.request.output, target.name, (".pt2",),
                           "torch.export programs")

    def run(self) -> Migration:
        import torch

        from ..frontends.convert import convert

        target = self.target()
        path = self.output_path(target)
        inputs = self.ws.inputs_for(target)
        if inputs is None:
            raise InputsError(f"migrating {target.spec} runs it, so it needs example inputs",
                              hint='pass them with --inputs "torch.rand(3, 4)" (or define '
                                   "`example_inputs` in the model file)")
        m = Migration(target.spec)
        compiled = target.kind in ("archive", "script_module", "script_function")
        # 1. runs
        cap = self.ws.capture(target, "script") if compiled else None
        run_original = (lambda i: cap.run(i)) if compiled else (
            lambda i: i.call(target.obj))
        try:
            with torch.no_grad():
                reference = run_original(inputs)
        except Exception as exc:  # noqa: BLE001 - the model's own error
            m.checks.append(Check("runs", False, f"the model raised {_one_line(exc)} on "
                                                 f"{_describe(inputs)}"))
            return m
        m.checks.append(Check("runs", True, ("the compiled model" if compiled else
                                             "the Python model")
                              + f" ran on {_describe(inputs)}"))
        # 2. converts
        conversion = convert(target, cap.scripted if cap else None, inputs,
                             forks=self.request.inline_forks)
        m.method = conversion.method
        m.blockers = conversion.blockers
        m.notes += conversion.notes
        if conversion.program is None:
            detail = conversion.error or "it did not convert"
            if conversion.blockers:
                detail = (f"{len(conversion.blockers)} node(s) block the conversion; "
                          f"{detail}")
            m.checks.append(Check("converts", False, detail))
            if any(b.kind == "prim::fork" for b in conversion.blockers) \
                    and not self.request.inline_forks:
                m.notes.append("the forks can convert serially: run again with "
                               "--inline-forks (each task then runs after the other: the "
                               "parallelism is lost)")
            return m
        m.checks.append(Check("converts", True, f"{conversion.method} made an ExportedProgram"
                              + (f" ({conversion.serial_forks} fork(s) inlined, serial)"
                                 if conversion.serial_forks else "")))
        program = conversion.program
        m.program = program
        # 3. same outputs
        module = program.module()
        cases = [("the example inputs", inputs)] + [
            (v.change, v.inputs) for v in self._variants(target, inputs,
                                                         cap.scripted if cap else None)]
        recorder = self._recorder(target, cap, m) if compiled else None
        cases += [(label, case) for label, case in _scaled(inputs)] if recorder else []
        for label, case in cases:
            if label.startswith(_SCALED) and all(b.then and b.orelse for b in m.branches):
                break   # the scaled inputs only look for the side of an if none took
            try:
                with torch.no_grad():
                    want = reference if case is inputs else run_original(case)
            except Exception:  # noqa: BLE001 - a variant the original refuses: not valid
                continue
            try:
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = case.call(module)
            except Exception as exc:  # noqa: BLE001
                m.comparisons.append(Comparison(label, error=_refused(exc)))
                continue
            m.comparisons.append(_compare(label, want, got))
            if recorder is not None and m.comparisons[-1].same:
                self._record_branches(recorder, cap, case, m)
        bad = [c for c in m.comparisons if not c.same]
        worst = max((d for c in m.comparisons for d in c.max_diff if d is not None),
                    default=0.0)
        m.checks.append(Check(
            "same outputs", not bad,
            f"{len(m.comparisons) - len(bad)} of {len(m.comparisons)} inputs match "
            f"(largest difference {worst:.3g})" + (_differs(bad) if bad else "")
            + "".join(f"; {b.summary()}" for b in m.branches)))
        # 4. saved
        m.checks.append(self._save(program, path, inputs, module, m))
        m.program_target = self._program_target(target, program, path)
        if self.request.pictures:
            self._pictures(target, m.program_target, path, m, compiled)
        return m

    def _recorder(self, target, cap, m: Migration):
        """Which side of each if on tensor data the compared inputs take (None when the
        original has no such if, or it cannot be instrumented)."""
        from ..frontends.branches import BranchRecorder
        from ..frontends.convert import node_locations_in

        try:
            recorder = BranchRecorder.of(cap.scripted)
        except Exception as exc:  # noqa: BLE001 - an IR form the recorder does not know
            m.notes.append(f"which branches the inputs took is not known: {_one_line(exc)}")
            return None
        if not recorder.ifs:
            return None
        m.branches = [Branches(loc) for loc in node_locations_in(target, recorder.ifs)]
        return recorder

    def _record_branches(self, recorder, cap, case, m: Migration) -> None:
        from ..frontends.compiled_run import positional_inputs

        try:
            taken = recorder.run(positional_inputs(cap.scripted, case))
        except Exception:  # noqa: BLE001 - the original ran on it: the copy does the same
            return
        for index, side in taken:
            branch = m.branches[index]
            if side == 0:
                branch.then += 1
            else:
                branch.orelse += 1

    def _program_target(self, target, program, path: Path):
        from dataclasses import replace

        converted = replace(target, obj=program, kind="exported", name=f"{target.name} "
                            "(exported)", spec=str(path), compilation_unit=None, entry=None)
        self.ws.derived(target, converted)
        return converted

    def _variants(self, target, inputs, compiled=None) -> list:
        from ..frontends.inputs import forward_arguments
        from ..frontends.variants import variants

        try:
            names = forward_arguments(target.obj)
        except Exception:  # noqa: BLE001
            names = []
        if not names and compiled is not None:   # an archive: its forward's schema names them
            try:
                schema = (compiled.forward.schema if hasattr(compiled, "forward")
                          else compiled.schema)
                names = [a.name for a in schema.arguments
                         if a.name != "self"][:len(inputs.flat)]
            except Exception:  # noqa: BLE001 - no schema: positions
                names = []
        names = names or [f"input {i}" for i in range(len(inputs.flat))]
        return [v for v in variants(inputs, names) if v.kind != "dtype"][:MAX_VARIANTS]

    def _save(self, program, path: Path, inputs, module, m: Migration) -> Check:
        import torch

        from ..files import write_atomic

        buffer = io.BytesIO()
        try:
            torch.export.save(program, buffer)
        except Exception as exc:  # noqa: BLE001
            return Check("saved", False, f"torch.export.save failed: {_one_line(exc)}")
        write_atomic(path, buffer.getvalue())
        m.written.append(str(path))
        try:
            loaded = torch.export.load(str(path))
            with torch.no_grad():
                again = _compare("reloaded", inputs.call(module), inputs.call(loaded.module()))
        except Exception as exc:  # noqa: BLE001
            return Check("saved", False, f"{path} was written but does not load back: "
                                         f"{_one_line(exc)}")
        if not again.same:
            return Check("saved", False, f"{path} loads back with other outputs")
        return Check("saved", True, f"{path} ({len(buffer.getvalue()) // 1024} KB), loaded "
                                    "back with the same outputs")

    def _pictures(self, target, converted, path: Path, m: Migration, compiled: bool) -> None:
        """The converted program's picture, and the original's as it was captured: a
        compiled original as loaded, a Python one scripted, or traced when it does not
        script (``auto``: the capture says which, and why, in the picture's notes)."""
        from ..files import write_atomic

        original = "script" if compiled else "auto"
        for view_target, mode, picture in (
                (converted, "export", path.with_suffix(".svg")),
                (target, original, path.with_name(path.stem + ".original.svg"))):
            view = self.ws.view(view_target, mode)
            write_atomic(picture, view.svg(self.request.engine))
            m.written.append(str(picture))


#: the label of the inputs scaled to reach an if's other side
_SCALED = "float inputs ×"
_SCALES = (10.0, -10.0, 100.0, -100.0, 0.0)


def _scaled(inputs) -> list[tuple[str, Any]]:
    """The example's float inputs scaled (×±10, ×±100, ×0): tried only while an if on
    tensor data has a side no compared input took. A negated input does not always flip a
    condition computed after a layer (``linear(x).sum() > 0`` is dominated by the bias); a
    large factor of either sign usually does."""
    import torch
    from torch.utils._pytree import tree_map

    from ..frontends.inputs import ExampleInputs

    out = []
    for factor in _SCALES:
        def scale(v, factor=factor):
            return v * factor if isinstance(v, torch.Tensor) and v.is_floating_point() else v
        out.append((f"{_SCALED}{factor:g}", ExampleInputs(tree_map(scale, tuple(inputs.args)),
                                                           tree_map(scale,
                                                                    dict(inputs.kwargs)))))
    return out


_GUARD = re.compile(r"Guard failed: (\w+)\.size\(\)\[(\d+)\] == (\d+)")


def _refused(exc: BaseException) -> str:
    """Why the converted program refused an input the original took. A shape guard means
    the conversion specialised a dimension to the example's size: say so, in those words."""
    text = _one_line(exc)
    found = _GUARD.search(str(exc))
    if found:
        name, dim, size = found.groups()
        return (f"the exported program takes only size {size} in dim {dim} of {name}: the "
                f"conversion specialised it to the example's size, the original takes "
                f"others (guard {name}.size()[{dim}] == {size})")
    return text


def _differs(bad: list[Comparison]) -> str:
    """The inputs whose outputs differ, grouped by why (a specialised dimension refuses
    every variant of that dimension the same way)."""
    groups: dict[str, list[str]] = {}
    for c in bad:
        groups.setdefault(c.error or _diffs(c), []).append(c.inputs)
    return "".join(f"; differs on {len(labels)} input(s) ({'; '.join(labels)}): {why}"
                   for why, labels in groups.items())


def _diffs(c: Comparison) -> str:
    return "max difference " + ", ".join("shape/dtype differ" if d is None else f"{d:.3g}"
                                         for d in c.max_diff)


# -- formats ------------------------------------------------------------------------------
_ORDER = ("runs", "converts", "same outputs", "saved")


def _rows(m: Migration) -> list[Check]:
    return in_order(m.checks, _ORDER)


def to_text(m: Migration) -> str:
    lines = [f"irviz migrate {m.target}" + (f"  ({m.method})" if m.method else "")]
    for check in _rows(m):
        lines.append(text_row(check))
        if check.name == "converts" and m.blockers:
            for b in m.blockers:
                lines.append(f"      {b.location or '(no line)'}: {b.kind}")
                lines.append(f"        hint: {b.hint}")
    lines += [f"  note: {n}" for n in m.notes]
    lines += [f"  wrote {w}" for w in m.written]
    lines.append("migrated: the program converted and every output matched" if m.migrated
                 else "not migrated")
    return "\n".join(lines) + "\n"


def to_markdown(m: Migration) -> str:
    lines = [f"## Migration of `{m.target}`", ""]
    if m.method:
        lines += [f"Method: {m.method}", ""]
    lines += markdown_table(_rows(m))
    if m.blockers:
        lines += ["", "### Blocking nodes", "", "| where | node | what to do |", "|---|---|---|"]
        lines += [f"| `{b.location or '-'}` | `{b.kind}` | {b.hint} |" for b in m.blockers]
    if m.comparisons:
        lines += ["", "### Outputs compared", "", "| inputs | same | largest difference |",
                  "|---|---|---|"]
        for c in m.comparisons:
            lines.append(f"| {c.inputs} | {_MARK[c.same]} | "
                         + (c.error or ", ".join("–" if d is None else f"{d:.3g}"
                                                 for d in c.max_diff)) + " |")
    if m.branches:
        lines += ["", "### Branches compared", "", "| if | then | else |", "|---|---|---|"]
        lines += [f"| `{b.location or '-'}` | {b.then} | {b.orelse} |" for b in m.branches]
    lines += [""] + [f"- note: {n}" for n in m.notes] + [f"- wrote `{w}`" for w in m.written]
    lines += ["", "**migrated**" if m.migrated else "**not migrated**"]
    return "\n".join(lines) + "\n"


def migrate_into(spec: str, workspace: Workspace, folder: Path,
                 inline_forks: bool = False) -> Migration:
    """A migration whose ``.pt2`` goes to ``folder`` and draws no pictures (the Sphinx
    directive's: it shows the checklist and draws the program itself)."""
    request = MigrateRequest(target=spec, output=str(folder) + "/", pictures=False,
                             inline_forks=inline_forks, quiet=True)
    return _Migrator(request, workspace, Console(True)).run()


def checklist_rows(m: Migration) -> list[tuple[str, str, str]]:
    """``(check, mark, detail)`` in checklist order, the blocking nodes under converts."""
    rows = []
    for check in _rows(m):
        rows.append((check.name, _MARK[check.ok], check.detail))
        if check.name == "converts":
            rows += [("", "", f"{b.location or '(no line)'}: {b.kind}: {b.hint}")
                     for b in m.blockers]
    return rows


def run(request: MigrateRequest, workspace: Workspace) -> int:
    console = Console(request.quiet)
    try:
        start()
        check_format(request.fmt)
        with model_output_to_stderr():
            migration = _Migrator(request, workspace, console).run()
    except Exception as exc:  # noqa: BLE001 - every error is reported, never a traceback
        return fail(exc, request.debug)
    print_checklist(migration, request.fmt, to_text, to_markdown)
    return MIGRATED if migration.migrated else NOT_MIGRATED
