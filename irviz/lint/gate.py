"""The one gate every finding passes before a user sees it (flake8's ``StyleGuide``).

``irviz lint``, ``irviz render --lint``, the Sphinx ``:lint:`` option and the Python API
all apply the same :class:`Gate`, so the same config gives the same findings
everywhere. In order:

1. consequences explained elsewhere: IRV150/IRV151 on a line where a more specific
   finding already says what the trace froze;
2. selection: ``--select``/``--ignore``/``--extend-select`` over ``[tool.irviz]``'s
   ``select``/``ignore``/``extend-select`` (ruff's semantics, the longer prefix wins);
3. ``per-file-ignores`` of ``[tool.irviz]``;
4. ``# noqa`` comments (counted as suppressed);
5. one finding per rule and line (two models of one file share their source lines; the
   ``related`` call sites of all of them are kept);
6. sorted by path, line, column and code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..config import Config, per_file_ignored
from .diagnostic import Diagnostic
from .registry import REGISTRY
from .rules.tracing import (LenOfTensor, LoopUnrolledOnShape, MetadataBranchBaked,
                            ResizeInTrace, ShapeSpecializedTrace, TensorIteration,
                            TensorToPythonBool, TensorToPythonNumber, TraceScriptDivergence,
                            TrainingFlagBranch)
from .suppress import filter_suppressed

__all__ = ["Gate", "Passed", "drop_explained"]

#: a trace-vs-script or trace-vs-retrace difference is a consequence of these findings
EXPLAINS_DIVERGENCE = (TensorToPythonBool, MetadataBranchBaked, LoopUnrolledOnShape,
                       TensorIteration, LenOfTensor, TensorToPythonNumber, ResizeInTrace,
                       TrainingFlagBranch)


@dataclass(frozen=True)
class Passed:
    """What came through the gate, and how many ``# noqa`` comments held back."""

    kept: list[Diagnostic]
    suppressed: int


def drop_explained(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """IRV150/IRV151 on a line where a more specific finding already says what the trace
    froze (they are its consequences)."""
    diagnostics = list(diagnostics)
    consequences = {TraceScriptDivergence.code, ShapeSpecializedTrace.code}
    explains = {rule.code for rule in EXPLAINS_DIVERGENCE}
    explained = {(d.path, d.line) for d in diagnostics if d.code in explains}
    return [d for d in diagnostics
            if not (d.code in consequences and (d.path, d.line) in explained)]


@dataclass(frozen=True)
class Gate:
    """Selection, per-file ignores, noqa and de-duplication for one run."""

    selected: frozenset[str]
    config: Config

    @classmethod
    def from_config(cls, config: Config | None = None, select: list[str] | None = None,
                    ignore: list[str] | None = None,
                    extend_select: list[str] | None = None) -> "Gate":
        """The gate for these command-line codes over ``config``: ``select`` replaces the
        config's, ``ignore`` and ``extend_select`` add to it. Unknown codes are a
        UsageError naming the option, or the config file and key they came from."""
        config = config or Config()
        where = config.source.name if config.source is not None else None
        REGISTRY.selected(config.select, config.ignore, config.extend_select, where=where)
        REGISTRY.selected(select, ignore, extend_select)
        chosen_select = select if select is not None else config.select
        chosen_ignore = (ignore or []) + (config.ignore or [])
        chosen_extend = (extend_select or []) + (config.extend_select or [])
        selected = REGISTRY.selected(chosen_select, chosen_ignore or None,
                                     chosen_extend or None)
        return cls(frozenset(selected), config)

    def apply(self, diagnostics: Iterable[Diagnostic]) -> Passed:
        kept = [d for d in drop_explained(diagnostics) if d.code in self.selected]
        kept = [d for d in kept
                if not any(d.code.startswith(p) for p in per_file_ignored(self.config, d.path))]
        kept, suppressed = filter_suppressed(kept)
        unique: dict[tuple, Diagnostic] = {}
        for d in kept:
            key = (d.code, d.path, d.line)
            first = unique.setdefault(key, d)
            if first is not d and d.related:  # each model's call site into a shared line
                unique[key] = first.with_related(*d.related)
        return Passed(sorted(unique.values(), key=lambda d: d.sort_key()), suppressed)
