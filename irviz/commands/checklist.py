"""The checklist a checked command prints (``irviz migrate``, ``irviz trace``): one row per
check in a fixed order, each passed (✓), failed (✗) or not reached (–), as text lines or a
Markdown table; and what both say of a model's inputs and errors in those rows."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..errors import UsageError

#: what a checklist is printed as (``--format``)
FORMATS = ("text", "json", "markdown")
#: how a check's ``ok`` is shown: passed, failed, not reached
MARK = {True: "✓", False: "✗", None: "–"}


@dataclass
class Check:
    """One line of the checklist: ``ok`` None when it was not reached."""

    name: str
    ok: bool | None
    detail: str

    def to_dict(self) -> dict:
        return {"check": self.name, "ok": self.ok, "detail": self.detail}


def rows(checks: Iterable[Check], order: tuple[str, ...]) -> list[Check]:
    """Every check of ``order``, those not done as not reached."""
    done = {c.name: c for c in checks}
    return [done.get(name) or Check(name, None, "not reached") for name in order]


def passed(checks: list[Check]) -> bool:
    """Every check done passed (and some were done)."""
    return bool(checks) and all(c.ok for c in checks)


def text_row(check: Check) -> str:
    """``  ✓ same outputs  9 of 9 inputs match``."""
    return f"  {MARK[check.ok]} {check.name:<13} {check.detail}"


def markdown_table(checks: list[Check]) -> list[str]:
    """The checks as a ``| check | result | detail |`` table."""
    lines = ["| check | result | detail |", "|---|---|---|"]
    for check in checks:
        detail = check.detail.replace("|", "\\|")
        lines.append(f"| {check.name} | {MARK[check.ok]} | {detail} |")
    return lines


def one_target(workspace, spec: str, command: str):
    """The one model ``spec`` names (a checked command takes one), else a usage error
    naming the ones it found."""
    targets = workspace.targets(spec)
    if len(targets) != 1:
        names = ", ".join(t.name for t in targets) or "none"
        raise UsageError(f"{spec} names {len(targets)} models ({names}); {command} takes one",
                         hint="pick one with FILE.py:NAME"
                              + (f", e.g. {spec.split(':')[0]}:{targets[0].name}"
                                 if targets else ""))
    return targets[0]


def output_file(given: object, name: str, suffixes: tuple[str, ...], what: str) -> Path:
    """``-o``, checked before any work: a file ending in one of ``suffixes`` in a writable
    folder. Default ``NAME`` + the first suffix here; a folder: that name in it."""
    from ..files import check_writable_dir

    given = str(given) if given else None
    path = Path(given) if given else Path(name + suffixes[0])
    if given and (path.is_dir() or given.endswith("/")):
        path = path / (name + suffixes[0])
    if path.suffix not in suffixes:
        raise UsageError(f"-o {given}: {what} are saved as {suffixes[0]}",
                         hint=f"use -o {path.with_suffix(suffixes[0])}")
    check_writable_dir(path.parent if str(path.parent) else Path("."))
    return path


def tensors(value: Any) -> list:
    """The tensor leaves of an output or of inputs, in order."""
    import torch
    from torch.utils._pytree import tree_leaves

    return [v for v in tree_leaves(value) if isinstance(v, torch.Tensor)]


def describe(inputs) -> str:
    """``3×4 float32, 3×4 float32``: the shapes and dtypes of example inputs."""
    return ", ".join("×".join(map(str, t.shape)) + f" {str(t.dtype)[6:]}"
                     for t in tensors((inputs.args, inputs.kwargs))) or "no tensors"


def one_line(exc: BaseException) -> str:
    """``RuntimeError: the last line of its message``."""
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1].strip() if lines else ''}"


def check_format(fmt: str) -> None:
    """``--format`` is one of :data:`FORMATS`."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt!r}", hint=f"choose one of {', '.join(FORMATS)}")


def print_checklist(result, fmt: str, to_text, to_markdown) -> None:
    """``result`` on stdout: its ``to_dict()`` as JSON, or ``to_text`` / ``to_markdown`` of
    it."""
    import json
    import sys

    if fmt == "json":
        text = json.dumps(result.to_dict(), indent=1) + "\n"
    else:
        text = (to_markdown if fmt == "markdown" else to_text)(result)
    sys.stdout.write(text)
    sys.stdout.flush()
