"""``irviz lint --fix`` and ``--diff``: the verified remedies that are edits of the user's
own source (``@torch.jit.script_if_tracing`` above a function, ``.eval()`` in a factory)
applied ruff-style, each file's edits together, bottom-up.

A remedy was verified on the loaded model (a function rebound, the model put in eval
mode); the file, edited, is a different thing to trust. So an edit is written only after
the edited text, saved as a temporary file beside the original (its imports resolve the
same way) and linted again through a fresh session (``relint``), shows no counterexample
at the fixed finding's place and no counterexample the original did not have. The
original is then replaced atomically by that very file; the temporary file never
survives, also on an error or Ctrl-C.

Never edited: a file of an installed library, and remedies that belong to the deployment
code (a submodule scripted before tracing, an argument passed): those are printed.
"""
from __future__ import annotations

import difflib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..frontends.records import SourceEdit
from ..paths import display_path, is_installed_library_file
from .diagnostic import Diagnostic
from .run_report import RunReport

__all__ = ["Skipped", "FileFix", "FixResult", "fix", "TEMP_PREFIX"]

#: the name of the edited copy linted beside the original (``_irviz_fix_model_k2j8.py``)
TEMP_PREFIX = "_irviz_fix_"

#: lints the given specs (``copy.py:NAME``) through a fresh workspace and session, gated
#: like the run being fixed
Relint = Callable[[list[str]], RunReport]


@dataclass(frozen=True)
class Skipped:
    """A finding with a verified remedy that ``--fix`` did not apply, and why."""

    finding: Diagnostic
    why: str

    def line(self) -> str:
        d = self.finding
        return (f"not applied: {display_path(d.path)}:{d.line}: {d.code} "
                f"{d.remedy.code if d.remedy is not None else ''} ({self.why})")


@dataclass
class FileFix:
    """One file's edits, verified: its text before and after, and the findings fixed."""

    path: str
    before: str
    after: str
    edits: list[SourceEdit]
    fixed: list[Diagnostic] = field(default_factory=list)

    def diff(self) -> str:
        """The unified diff, as ``ruff --diff`` prints it (the same name on both sides)."""
        shown = display_path(self.path)
        return "".join(difflib.unified_diff(_lines(self.before), _lines(self.after),
                                            fromfile=shown, tofile=shown))

    def moved(self, line: int) -> int:
        """Where line ``line`` of the original is in the edited text."""
        return _moved(line, self.edits)


@dataclass
class FixResult:
    files: list[FileFix] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def fixed(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.fixed]

    def remaining(self, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        """``diagnostics`` without the fixed findings, the lines of those in an edited
        file moved to where they are now."""
        fixed = {id(d) for d in self.fixed}
        by_path = {_real(f.path): f for f in self.files}
        out = []
        for d in diagnostics:
            if id(d) in fixed:
                continue
            edited = by_path.get(_real(d.path))
            if edited is not None:
                d = replace(d, line=edited.moved(d.line), end_line=None if d.end_line is None
                            else edited.moved(d.end_line))
            out.append(d)
        return out


def _real(path: str) -> str:
    return os.path.realpath(path)


def _lines(text: str) -> list[str]:
    """``text``'s lines with their endings, split where Python's tokenizer splits them
    (``\\n``, ``\\r\\n``, ``\\r``; not ``str.splitlines``' form feeds and separators), so
    line numbers are the ones the remedies carry."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def _extra(edit: SourceEdit) -> int:
    """Lines the edit adds."""
    return edit.new.count("\n")


def _moved(line: int, edits: list[SourceEdit]) -> int:
    """Line ``line`` of the original after ``edits``: lines added above it push it down;
    on an edited line, the old text is where ``new`` ends with it (a decorator inserted
    above a ``def``), else its first line."""
    out = line
    for edit in edits:
        if edit.line < line or (edit.line == line and edit.new.endswith(edit.old)):
            out += _extra(edit)
    return out


def _applied(text: str, edits: list[SourceEdit]) -> str:
    """``text`` with ``edits`` (at most one per line, each line checked) applied
    bottom-up, every line keeping its own line ending."""
    lines = _lines(text)
    for edit in sorted(edits, key=lambda e: e.line, reverse=True):
        old = lines[edit.line - 1]
        body = old.rstrip("\r\n")
        ending = old[len(body):]
        lines[edit.line - 1] = edit.new.replace("\n", ending or "\n") + ending
    return "".join(lines)


def _edits(text: str, findings: list[Diagnostic]) -> tuple[list[SourceEdit],
                                                           list[Diagnostic], list[Skipped]]:
    """The edits to make (one per line), the findings they fix, and those left out."""
    lines = [line.rstrip("\r\n") for line in _lines(text)]
    edits: dict[int, SourceEdit] = {}
    kept, skipped = [], []
    for d in findings:
        edit = d.remedy.edit
        if edit.line > len(lines) or lines[edit.line - 1] != edit.old:
            skipped.append(Skipped(d, f"line {edit.line} changed since it was linted"))
        elif edits.get(edit.line, edit) != edit:
            skipped.append(Skipped(d, f"another remedy edits line {edit.line}"))
        else:
            edits[edit.line] = edit
            kept.append(d)
    return list(edits.values()), kept, skipped


def _is_counterexample(d: Diagnostic) -> bool:
    return d.evidence is not None and d.evidence.verdict == "counterexample"


def _place(d: Diagnostic, edited: FileFix, copy: str) -> tuple[str, str, int]:
    """Where ``d`` (of the original run) is in the lint of the edited copy."""
    if _real(d.path) == _real(edited.path):
        return _real(copy), d.code, edited.moved(d.line)
    return _real(d.path), d.code, d.line


def _why_not(report: RunReport, edited: FileFix, copy: str, diagnostics: list[Diagnostic]
             ) -> str | None:
    """Why the lint of the edited copy does not show the fix (None: it does)."""
    def named(text: str) -> str:
        text = text.replace(copy, display_path(edited.path))
        return text.replace(os.path.basename(copy), os.path.basename(edited.path))

    if report.errors:
        _, error = report.errors[0]
        return (f"not verified: the edited file, linted on its own, failed: "
                f"{named(error.message)}; apply the edit by hand")
    left = {(_real(d.path), d.code, d.line): d for d in report.diagnostics
            if _is_counterexample(d)}
    for d in edited.fixed:
        still = left.get(_place(d, edited, copy))
        if still is not None:
            return (f"the edited file still has the counterexample: "
                    f"{named(still.evidence.summary)}")
    had = {_place(d, edited, copy) for d in diagnostics if _is_counterexample(d)}
    for place, d in left.items():
        if place not in had:
            return (f"the edited file has a new counterexample: {d.code} at line {d.line}: "
                    f"{named(d.evidence.summary)}")
    return None


def _copy_name(path: str) -> str:
    return TEMP_PREFIX + (re.sub(r"\W", "_", Path(path).stem) or "model") + "_"


def _verified(edited: FileFix, diagnostics: list[Diagnostic], relint: Relint,
              write: bool) -> str | None:
    """Lint the edited text as a copy beside the original; when the fix shows, and
    ``write``, the copy replaces the original. Returns why not (None: verified)."""
    original = edited.path
    fd, copy = tempfile.mkstemp(prefix=_copy_name(original), suffix=".py",
                                dir=os.path.dirname(original) or ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(edited.after.encode("utf-8"))
        targets = list(dict.fromkeys(d.target for d in edited.fixed))
        why = _why_not(relint([f"{copy}:{t}" for t in targets]), edited, copy, diagnostics)
        if why is None and Path(original).read_bytes() != edited.before.encode("utf-8"):
            why = "the file changed while the edit was verified"
        if why is None and write:
            shutil.copymode(original, copy)
            os.replace(copy, original)
        return why
    finally:
        if os.path.lexists(copy):
            os.unlink(copy)


def fix(diagnostics: list[Diagnostic], relint: Relint, write: bool = True) -> FixResult:
    """Apply (``write``) or only verify (``--diff``) the source edits of the remedies on
    ``diagnostics``; what was fixed, and every remedy left unapplied with why."""
    result = FixResult()
    by_file: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        if d.remedy is None:
            continue
        edit = d.remedy.edit
        if edit is None:
            result.skipped.append(Skipped(d, "deployment code"))
        elif is_installed_library_file(edit.path):
            result.skipped.append(Skipped(d, "in an installed library: "
                                               f"{display_path(edit.path)}"))
        elif d.target is None:
            result.skipped.append(Skipped(d, "no model named to verify it on"))
        elif not os.path.isfile(edit.path):
            result.skipped.append(Skipped(d, f"{edit.path} is not there any more"))
        else:
            by_file.setdefault(_real(edit.path), []).append(d)
    for path, findings in by_file.items():
        try:
            before = Path(path).read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            result.skipped += [Skipped(d, f"{path} is not UTF-8") for d in findings]
            continue
        edits, kept, skipped = _edits(before, findings)
        result.skipped += skipped
        if not edits:
            continue
        edited = FileFix(path, before, _applied(before, edits), edits, kept)
        why = _verified(edited, diagnostics, relint, write)
        if why is None:
            result.files.append(edited)
        else:
            result.skipped += [Skipped(d, why) for d in kept]
    return result
