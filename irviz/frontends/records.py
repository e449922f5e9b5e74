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

__all__ = ["Target", "LoadResult", "ARCHIVE_KINDS", "COMPILED_KINDS"]

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
