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
   ``related`` call sites of all of them are kept, and the strongest evidence);
6. severity from evidence (:func:`severity_of`): an error or warning needs a
   counterexample or a certainty, everything else is info;
7. sorted by path, line, column and code.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from ..config import Config, per_file_ignored
from ..paths import is_installed_library_file
from .diagnostic import VERDICTS, Diagnostic
from .registry import REGISTRY
from .rules.tracing import (LenOfTensor, LoopUnrolledOnShape, MetadataBranchBaked,
                            ResizeInTrace, ShapeSpecializedTrace, TensorIteration,
                            TensorToPythonBool, TensorToPythonNumber, TraceScriptDivergence,
                            TrainingFlagBranch)
from .suppress import filter_suppressed

__all__ = ["Gate", "Passed", "drop_explained", "severity_of"]

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


def severity_of(d: Diagnostic) -> str:
    """The one place severity is decided, from the evidence the finding carries (docs/lint.md:
    the evidence ladder):

    * a counterexample (a valid input on which the trace and the model differ): error;
    * a certainty (the rule's findings are facts no input changes, or the layer that
      found it said so): the rule's severity;
    * undecided in the user's own code (variants ran, and none drove the decision the
      finding rests on the other way: nothing shows the trace right): warning. In an
      installed library (it deploys by tracing), or when nothing ran at all (``--no-exec``,
      ``--verify 0``: no run was asked for), info;
    * anything else (held: a variant drove the decision and the trace still agreed; a
      validation that raises): info. A rule whose severity is info stays info."""
    rule = REGISTRY.get(d.code) if d.code in REGISTRY else None
    declared = rule.severity if rule is not None else d.severity
    if declared == "info":
        return "info"
    verdict = d.evidence.verdict if d.evidence is not None else None
    if verdict == "counterexample":
        return "error"
    if verdict == "certain" or (verdict is None and rule is not None
                                and rule.proof == "certain"):
        return declared
    if verdict == "undecided" and d.evidence.held_on and rule is not None \
            and rule.decision and not is_installed_library_file(d.path):
        return "warning"
    return "info"


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
        return Passed(one_per_line(kept), suppressed)


def one_per_line(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """One finding per code and line, whichever models reached it and in whatever order:
    the finding with the strongest evidence (ties: the first model by name), the related
    call sites of all of them (sorted), the severity its evidence gives. So the ``--shard``
    runs of a zoo, merged with ``--merge``, give the very records of one full run."""
    groups: dict[tuple, list[Diagnostic]] = {}
    for d in diagnostics:
        groups.setdefault((d.code, d.path, d.line), []).append(d)
    judged = []
    for group in groups.values():
        best = min(group, key=_rank)
        related = sorted({r for d in group for r in d.related})
        best = replace(best, related=tuple(related))
        judged.append(best.with_evidence(best.evidence, severity_of(best)))
    return sorted(judged, key=lambda d: d.sort_key())


def _rank(d: Diagnostic) -> tuple:
    """Stronger evidence first (a counterexample beats a held finding), then by model."""
    verdict = VERDICTS.index(d.evidence.verdict) if d.evidence is not None else len(VERDICTS)
    return (verdict, d.target or "", d.evidence.summary if d.evidence is not None else "",
            d.message)
