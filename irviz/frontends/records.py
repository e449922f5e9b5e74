"""The records every frontend shares, at the bottom of ``frontends/``.

``frontends/`` imports in one direction: records / graph_walk -> user_code -> inputs -> adapters ->
archives -> loader -> overloads -> eager_run / trace_graph -> export / compiled_run / branches ->
capture -> retrace / variants / optimize / convert -> verification. A module imports only what sits below it
(``tests/test_layering.py`` checks it).
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Target", "LoadResult", "ARCHIVE_KINDS", "COMPILED_KINDS", "Remedy", "Attempt",
           "SourceEdit", "REMEDY_KINDS", "remedy_line"]

#: Target kinds loaded from a file of compiled code rather than imported Python
ARCHIVE_KINDS = ("archive", "exported")
#: Target kinds whose object is TorchScript (no Python forward to run eagerly)
COMPILED_KINDS = ("archive", "script_module", "script_function")


@dataclass
class Target:
    """One loadable model."""

    #: "MyCell", "example", "make_model()"; for archives the file stem
    name: str
    #: nn.Module instance, torch.jit.ScriptModule, ScriptFunction, or plain function
    #: (out of the repr: a large model's runs to pages)
    obj: object = field(repr=False)
    #: "module" | "script_module" | "script_function" | "function" | "archive" |
    #: "exported" (a torch.export program from a .pt2)
    kind: str
    #: user-facing spec for messages, e.g. "samples/decision_gate.py:MyCell"
    spec: str
    #: the model file (the module's ``__file__``; the archive for archives)
    source_file: Path | None
    #: the imported module (None for archives)
    user_module: types.ModuleType | None = field(repr=False)
    #: a TorchScript archive's compilation unit: its free functions (``F.relu``,
    #: ``F.batch_norm``) live there and nowhere else (None for other targets)
    compilation_unit: object = field(default=None, repr=False)
    #: the method to draw when ``forward`` is overloaded (``forward__1``): the Workspace
    #: makes one target per overload when no inputs choose one; None otherwise
    entry: str | None = None


@dataclass
class LoadResult:
    targets: list[Target]
    #: (name, one-line reason), e.g. classes whose constructor needs arguments
    skipped: list[tuple[str, str]] = field(default_factory=list)


#: what a remedy does, in the order they are tried (docs/lint.md: verified remedies):
#: ``script-submodule`` the smallest submodule holding the line scripted, the rest traced
#: around it (the tutorial's ``MyDecisionGate``); ``script-if-tracing`` the free function
#: holding the line decorated with ``@torch.jit.script_if_tracing``; ``eval`` the model
#: traced in eval mode; ``pass-argument`` the left-out argument passed in the example
#: inputs
REMEDY_KINDS = ("script-submodule", "script-if-tracing", "eval", "pass-argument")


@dataclass(frozen=True)
class SourceEdit:
    """A remedy that is an edit of the user's source (``irviz lint --fix`` applies it):
    line ``line`` of ``path``, which reads ``old``, becomes ``new`` (``new`` may hold
    several lines: a decorator above a ``def``)."""

    path: str
    line: int
    old: str
    new: str

    def to_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "old": self.old, "new": self.new}


@dataclass(frozen=True)
class Attempt:
    """A candidate remedy that did not verify, and why (``does not compile: ...``,
    ``outputs still differ on x negated: ...``)."""

    code: str
    why: str

    def line(self) -> str:
        return f"`{self.code}`: {self.why}"

    def to_dict(self) -> dict:
        return {"code": self.code, "why": self.why}


@dataclass(frozen=True)
class Remedy:
    """A fix irviz found for a trace that is wrong, and verified: with it applied, the model
    traced again on the example matches the model's Python on the counterexample and on
    every other valid variant (``verified_on`` inputs, the example included).

    ``code`` is what the user pastes (``model.cell.dg = torch.jit.script(model.cell.dg)``).
    ``module`` is the submodule scripted (its qualified name, ``""`` for the whole model),
    ``function`` the free function decorated (``module:qualname``), ``arguments`` the
    arguments an example must pass; ``edit`` the source edit when the remedy is one."""

    kind: str
    code: str
    verified_on: int
    module: str | None = None
    function: str | None = None
    arguments: tuple[str, ...] = ()
    edit: SourceEdit | None = None

    def __post_init__(self) -> None:
        if self.kind not in REMEDY_KINDS:
            raise ValueError(f"remedy kind {self.kind!r} is not one of "
                             f"{', '.join(REMEDY_KINDS)}")
        object.__setattr__(self, "arguments", tuple(self.arguments))
        if isinstance(self.edit, dict):
            object.__setattr__(self, "edit", SourceEdit(**self.edit))

    def line(self, target: str | None = None) -> str:
        """``remedy for Jitter (verified on 14 inputs, counterexample included):
        model.eval()``: ``model`` is ``target``, the model the finding is about (a file
        can hold several)."""
        whose = f" for {target}" if target else ""
        return (f"remedy{whose} (verified on {self.verified_on} inputs, counterexample "
                f"included): {self.code}")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "code": self.code, "verified_on": self.verified_on,
                "module": self.module, "function": self.function,
                "arguments": list(self.arguments),
                "edit": self.edit.to_dict() if self.edit is not None else None}

    @classmethod
    def from_dict(cls, data: dict) -> "Remedy":
        return cls(**{k: data.get(k) for k in ("kind", "code", "verified_on", "module",
                                                 "function", "edit")},
                   arguments=tuple(data.get("arguments") or ()))


def remedy_line(remedy: Remedy | dict | None, tried=(), target: str | None = None
                ) -> str | None:
    """``remedy for MyCell (verified on 14 inputs, counterexample included): ...``, or
    ``no verified remedy: ...`` naming each candidate and why it failed (from records or
    their JSON forms); None when no search ran."""
    if isinstance(remedy, dict):
        remedy = Remedy.from_dict(remedy)
    if remedy is not None:
        return remedy.line(target)
    tried = [Attempt(**a) if isinstance(a, dict) else a for a in tried or ()]
    return "no verified remedy: " + "; ".join(a.line() for a in tried) if tried else None
